// The tuned record as YAML (inside tuned.yaml) and as JSON (inside onboard.json): one field list,
// walked by both, so the two can never drift apart.
#include "fusor/tuned_record.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

#include "fusor/error.h"
#include "tune/tuned_record_json.h"

namespace fusor::tune {

bool overloaded(const CurvePoint& p) { return p.errors > 0 || p.achieved_qps < 0.95 * p.offered_qps; }

bool meets(const CurvePoint& p, const Slo& slo) { return !overloaded(p) && slo_load(p, slo) <= 1; }

bool meets(const CurvePoint& p, double p99_ms) { return meets(p, Slo{.p99_ms = p99_ms}); }

double slo_load(const CurvePoint& p, const Slo& slo) {
  double load = 0;
  for (auto [measured, target] : {std::pair{p.p99_ms, slo.p99_ms}, {p.ttft_p99_ms, slo.ttft_p99_ms}, {p.itl_p99_ms, slo.itl_p99_ms}})
    if (target > 0) load = std::max(load, measured / target);
  return load;
}

std::vector<double> nondecreasing_fit(const std::vector<double>& values) {
  struct Block {
    double sum;
    size_t n;
  };
  std::vector<Block> blocks;  // pool adjacent violators: merge while a block's mean exceeds the next one's
  for (double v : values) {
    blocks.push_back({v, 1});
    while (blocks.size() > 1) {
      const Block b = blocks.back();
      Block& a = blocks[blocks.size() - 2];
      if (a.sum * static_cast<double>(b.n) <= b.sum * static_cast<double>(a.n)) break;
      a.sum += b.sum, a.n += b.n;
      blocks.pop_back();
    }
  }
  std::vector<double> fit;
  for (const Block& b : blocks) fit.insert(fit.end(), b.n, b.sum / static_cast<double>(b.n));
  return fit;
}

std::vector<double> slo_load_trend(const std::vector<CurvePoint>& curve, const Slo& slo) {
  std::vector<double> loads;
  for (const CurvePoint& p : curve) loads.push_back(slo_load(p, slo));
  return nondecreasing_fit(loads);
}

size_t good_prefix(const std::vector<CurvePoint>& curve, const Slo& slo) {
  size_t end = 0;  // the first point with errors: nothing from there counts or shapes the trend
  while (end < curve.size() && curve[end].errors == 0) ++end;
  const std::vector<CurvePoint> usable(curve.begin(), curve.begin() + static_cast<std::ptrdiff_t>(end));
  const std::vector<double> trend = slo_load_trend(usable, slo);
  size_t n = 0;
  for (size_t i = 0; i < end && trend[i] <= 1; ++i)
    if (meets(curve[i], slo)) n = i + 1;
  return n;
}

double measured_capacity(const std::vector<CurvePoint>& curve, const Slo& slo) {
  const size_t n = good_prefix(curve, slo);
  return n > 0 ? curve[n - 1].offered_qps : 0;
}

double measured_capacity(const std::vector<CurvePoint>& curve, double p99_ms) {
  return measured_capacity(curve, Slo{.p99_ms = p99_ms});
}

const CurvePoint* capacity_point(const std::vector<CurvePoint>& curve, const Slo& slo) {
  const size_t n = good_prefix(curve, slo);
  return n > 0 ? &curve[n - 1] : nullptr;
}

const Candidate* ClassRecord::chosen_candidate() const {
  for (const Candidate& c : candidates)
    if (c.setting == chosen) return &c;
  return nullptr;
}

double closest_slo_load(const Candidate& c, const Slo& slo) {
  double closest = std::numeric_limits<double>::infinity();
  for (const CurvePoint& p : c.curve)
    if (p.errors == 0) closest = std::min(closest, slo_load(p, slo));
  return closest;
}

void ClassRecord::choose_best() {
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates)
    if (!best || c.capacity_qps > best->capacity_qps ||
        (c.capacity_qps == best->capacity_qps && c.predicted_qps > best->predicted_qps))
      best = &c;
  if (best && best->capacity_qps <= 0)  // none met the SLO: the one that came closest to it
    for (const Candidate& c : candidates)
      if (closest_slo_load(c, slo) < closest_slo_load(*best, slo)) best = &c;
  if (best) chosen = best->setting, capacity_qps = best->capacity_qps;
}

const ClassRecord* TunedRecord::find(const std::string& cls) const {
  for (const ClassRecord& c : classes)
    if (c.name == cls) return &c;
  return nullptr;
}

namespace {

// Block style for the record's structure; the small leaf mappings (a curve point, a setting)
// stay on one line each, so a curve reads as a table.
void set_styles(YAML::Node node, int depth) {
  if (node.IsMap()) {
    bool leaf = std::all_of(node.begin(), node.end(), [](const auto& kv) { return kv.second.IsScalar(); });
    node.SetStyle(leaf && depth > 1 ? YAML::EmitterStyle::Flow : YAML::EmitterStyle::Block);
    for (auto kv : node) set_styles(kv.second, depth + 1);
  } else if (node.IsSequence()) {
    bool scalars = std::all_of(node.begin(), node.end(), [](const YAML::Node& n) { return n.IsScalar(); });
    node.SetStyle(scalars ? YAML::EmitterStyle::Flow : YAML::EmitterStyle::Block);
    for (auto item : node) set_styles(item, depth + 1);
  }
}

}  // namespace

std::string tuned_yaml(const Config& config, const TunedRecord& record, const std::string& header_comment) {
  std::string out;
  std::istringstream header(header_comment);
  for (std::string line; std::getline(header, line);) out += "# " + line + "\n";
  out += config_yaml(config);
  // JSON is valid YAML: one field list (tuned_record_json) serves both formats.
  YAML::Node node = YAML::Load(tuned_record_json(record).dump());
  set_styles(node, 0);
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "tuned" << YAML::Value << node << YAML::EndMap;
  return out + e.c_str() + "\n";
}

TunedRecord parse_tuned_record(const std::string& yaml_text, const std::string& source_name) {
  YAML::Node top;
  try {
    top = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(source_name + ": YAML syntax error: " + e.msg);
  }
  if (!top.IsMap() || !top["tuned"] || !top["tuned"].IsMap())
    throw Error(source_name + ": no 'tuned:' section; write the file with fusor tune");
  return tuned_record_from_json(yaml_to_json(top["tuned"]), source_name);
}

TunedRecord load_tuned_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read tuned file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_tuned_record(text.str(), path);
}

}  // namespace fusor::tune
