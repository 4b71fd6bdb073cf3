#include "tune/fusion_matrix.h"

#include <algorithm>
#include <cmath>

namespace fusor::tune {
namespace {

constexpr double kMinGain = 0.03;    // below this a switch is not worth a second plan
constexpr double kNoiseFactor = 2;   // the gain must exceed this many MADs of the per-round ratio

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2) return v[mid];
  const double upper = v[mid];
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

}  // namespace

bool RoundComparison::clear_win() const {
  const bool majority = wins >= 3 && 4 * wins >= 3 * rounds;
  return majority && 1 - ratio > std::max(kMinGain, kNoiseFactor * noise);
}

RoundComparison compare_rounds(const std::vector<double>& kept, const std::vector<double>& option) {
  RoundComparison c;
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(kept.size(), option.size()); ++i) {
    if (!(kept[i] > 0)) continue;
    ratios.push_back(option[i] / kept[i]);
    if (option[i] < kept[i]) ++c.wins;
  }
  c.rounds = static_cast<int64_t>(ratios.size());
  if (ratios.empty()) return c;
  c.ratio = median(ratios);
  std::vector<double> deviations;
  for (double r : ratios) deviations.push_back(std::abs(r - c.ratio));
  c.noise = median(deviations);
  return c;
}

std::vector<MatrixEntry> MatrixChoice::entries() const {
  std::vector<MatrixEntry> out;
  if (std::all_of(per_rows.begin(), per_rows.end(), [](const auto& c) { return c.second->name == "all"; })) return out;
  for (const auto& [rows, option] : per_rows) {
    if (!out.empty() && out.back().fusion == option->fusion) out.back().max_batch = rows;
    else out.push_back({rows, option->fusion});
  }
  return out;
}

MatrixChoice choose_matrix(const std::vector<FusionOption>& options, const std::map<int64_t, RoundTimes>& rounds,
                           const std::vector<int64_t>& rows) {
  MatrixChoice c;
  if (options.empty()) return c;
  const FusionOption& kept = options.front();
  for (int64_t r : rows) {
    auto at = rounds.find(r);
    if (at == rounds.end() || !at->second.count(kept.name)) continue;
    const RoundTimes& times = at->second;
    const std::vector<double>& kept_ms = times.at(kept.name);
    const FusionOption* best = &kept;
    double best_ratio = 1;
    const size_t first = c.timings.size();
    for (const FusionOption& o : options) {
      auto t = times.find(o.name);
      if (t == times.end()) continue;
      const RoundComparison cmp = compare_rounds(kept_ms, t->second);  // the kept plan's own: ratio 1, no wins
      if (cmp.clear_win() && cmp.ratio < best_ratio) best = &o, best_ratio = cmp.ratio;
      c.timings.push_back({r, o.name, median(t->second), false, cmp.rounds, cmp.wins, cmp.ratio, cmp.noise});
    }
    for (size_t i = first; i < c.timings.size(); ++i) c.timings[i].chosen = c.timings[i].option == best->name;
    c.per_rows.push_back({r, best});
  }
  return c;
}

}  // namespace fusor::tune
