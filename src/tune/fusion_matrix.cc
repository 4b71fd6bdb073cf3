#include "tune/fusion_matrix.h"

#include <algorithm>
#include <cmath>

namespace fusor::tune {

std::vector<MatrixEntry> MatrixChoice::entries() const {
  std::vector<MatrixEntry> out;
  if (std::all_of(per_rows.begin(), per_rows.end(), [](const auto& c) { return c.second->name == "all"; })) return out;
  for (const auto& [rows, option] : per_rows) {
    if (!out.empty() && out.back().fusion == option->fusion) out.back().max_batch = rows;
    else out.push_back({rows, option->fusion});
  }
  return out;
}

MatrixChoice choose_matrix(const std::vector<FusionOption>& options, const std::map<std::string, ServiceTimes>& times,
                           const std::vector<int64_t>& rows) {
  MatrixChoice c;
  auto ms_of = [&](const FusionOption& o, int64_t r) -> const double* {
    auto it = times.find(o.name);
    if (it == times.end()) return nullptr;
    auto at = it->second.ms_by_rows.find(r);
    return at == it->second.ms_by_rows.end() ? nullptr : &at->second;
  };
  for (int64_t r : rows) {
    const FusionOption* best = nullptr;
    double best_ms = INFINITY;
    for (const FusionOption& o : options)
      if (const double* ms = ms_of(o, r); ms && *ms * (o.name == "all" ? 0.97 : 1.0) < best_ms)
        best_ms = *ms * (o.name == "all" ? 0.97 : 1.0), best = &o;
    if (best) c.per_rows.push_back({r, best});
    for (const FusionOption& o : options)
      if (const double* ms = ms_of(o, r)) c.timings.push_back({r, o.name, *ms, &o == best});
  }
  return c;
}

}  // namespace fusor::tune
