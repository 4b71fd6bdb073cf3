#include "tune/tuned_record_json.h"

#include <charconv>
#include <cmath>

#include "fusor/error.h"
#include "fusor/tune.h"

namespace fusor::tune {
namespace {

using nlohmann::json;

json setting_json(const Setting& s) {
  json j = {{"batch_window_ms", s.batch_window_ms}, {"max_batch", s.max_batch}, {"execution_contexts", s.execution_contexts}};
  if (s.max_batch_tokens > 0) j["max_batch_tokens"] = s.max_batch_tokens;  // packed models only
  if (s.step_tokens > 0) {  // generative models only
    j["step_tokens"] = s.step_tokens;
    j["max_running"] = s.max_running;
    j["prefill_chunk"] = s.prefill_chunk;
  }
  return j;
}

json curve_json(const std::vector<CurvePoint>& curve, bool generative) {
  json out = json::array();
  for (const CurvePoint& p : curve) {
    json point = {{"offered_qps", p.offered_qps}, {"achieved_qps", p.achieved_qps}, {"p50_ms", p.p50_ms}, {"p99_ms", p.p99_ms},
                  {"utilisation", p.utilisation}, {"mean_batch", p.mean_batch}, {"errors", p.errors},
                  {"useful_tokens_per_s", p.useful_tokens_per_s}, {"padding", p.padding},
                  {"bucket_padding", p.bucket_padding}};
    if (generative) {
      point["ttft_p50_ms"] = p.ttft_p50_ms;
      point["ttft_p99_ms"] = p.ttft_p99_ms;
      point["itl_p50_ms"] = p.itl_p50_ms;
      point["itl_p99_ms"] = p.itl_p99_ms;
      point["output_tokens_per_s"] = p.output_tokens_per_s;
    }
    out.push_back(std::move(point));
  }
  return out;
}

json class_json(const ClassRecord& c, bool generative) {
  json slo = {{"p99_ms", c.slo.p99_ms}};
  if (c.slo.throughput) slo["throughput"] = true;
  if (c.slo.ttft_p99_ms > 0) slo["ttft_p99_ms"] = c.slo.ttft_p99_ms;
  if (c.slo.itl_p99_ms > 0) slo["itl_p99_ms"] = c.slo.itl_p99_ms;
  json candidates = json::array();
  for (const Candidate& k : c.candidates)
    candidates.push_back({{"setting", setting_json(k.setting)}, {"predicted_qps", k.predicted_qps},
                          {"capacity_qps", k.capacity_qps}, {"curve", curve_json(k.curve, generative)}});
  json j = {{"name", c.name}, {"slo", slo}, {"capacity_qps", c.capacity_qps}, {"chosen", setting_json(c.chosen)},
            {"candidates", candidates}};
  if (generative) j["capacity_tokens_per_s"] = c.capacity_tokens_per_s;
  return j;
}

// Reads fields by name under a path for messages; numbers may arrive as text (from YAML).
class Reader {
 public:
  Reader(const json& j, std::string path, const std::string& source) : j_(j), path_(std::move(path)), source_(source) {}

  const json& at(const std::string& key) const {
    if (!j_.is_object() || !j_.contains(key)) fail(key, "is missing");
    return j_.at(key);
  }
  bool has(const std::string& key) const { return j_.is_object() && j_.contains(key); }
  Reader child(const std::string& key) const { return Reader(at(key), path_ + "." + key, source_); }
  std::vector<Reader> items(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "must be a list");
    std::vector<Reader> out;
    for (size_t i = 0; i < v.size(); ++i) out.emplace_back(v[i], path_ + "." + key + "[" + std::to_string(i) + "]", source_);
    return out;
  }
  double number(const std::string& key) const {
    const json& v = at(key);
    double x = 0;
    if (v.is_number()) x = v.get<double>();
    else if (!v.is_string() || !parse(v.get<std::string>(), x)) fail(key, "must be a number");
    if (!std::isfinite(x)) fail(key, "must be finite");
    return x;
  }
  int64_t integer(const std::string& key) const {
    double x = number(key);
    if (x != std::floor(x)) fail(key, "must be an integer");
    return static_cast<int64_t>(x);
  }
  // This reader's own value as an integer (a list item).
  int64_t integer_value() const {
    double x = 0;
    if (j_.is_number()) x = j_.get<double>();
    else if (!j_.is_string() || !parse(j_.get<std::string>(), x)) fail("", "must be a number");
    if (!std::isfinite(x) || x != std::floor(x)) fail("", "must be an integer");
    return static_cast<int64_t>(x);
  }
  bool flag(const std::string& key) const {
    const json& v = at(key);
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_string() && (v == "true" || v == "false")) return v == "true";
    fail(key, "must be true or false");
  }
  std::string text(const std::string& key) const {
    const json& v = at(key);
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    fail(key, "must be text");
  }
  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(source_ + ": " + path_ + "." + key + " " + what);
  }

 private:
  static bool parse(const std::string& s, double& x) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    return ec == std::errc() && end == s.data() + s.size();
  }
  const json& j_;
  std::string path_;
  const std::string& source_;
};

Setting read_setting(const Reader& r) {
  Setting s;
  s.batch_window_ms = r.number("batch_window_ms");
  s.max_batch = r.integer("max_batch");
  s.execution_contexts = r.integer("execution_contexts");
  if (s.batch_window_ms < 0 || s.max_batch < 1 || s.execution_contexts < 1) r.fail("max_batch", "or a sibling is out of range");
  if (r.has("max_batch_tokens") && (s.max_batch_tokens = r.integer("max_batch_tokens")) < 1)
    r.fail("max_batch_tokens", "must be at least 1");
  if (r.has("step_tokens")) {  // a generative setting
    s.step_tokens = r.integer("step_tokens");
    s.max_running = r.integer("max_running");
    s.prefill_chunk = r.integer("prefill_chunk");
    if (s.step_tokens < 1 || s.max_running < 1 || s.prefill_chunk < 0) r.fail("step_tokens", "or a sibling is out of range");
  }
  return s;
}

ClassRecord read_class(const Reader& r) {
  ClassRecord c;
  c.name = r.text("name");
  Reader slo = r.child("slo");
  c.slo.p99_ms = slo.number("p99_ms");
  c.slo.throughput = slo.has("throughput") && slo.flag("throughput");
  if (slo.has("ttft_p99_ms")) c.slo.ttft_p99_ms = slo.number("ttft_p99_ms");
  if (slo.has("itl_p99_ms")) c.slo.itl_p99_ms = slo.number("itl_p99_ms");
  // A negative target read as no bound at all (plan's slo_load ignores targets <= 0), and so did
  // 0 for a class whose SLO sets no other target.
  for (const char* key : {"p99_ms", "ttft_p99_ms", "itl_p99_ms"})
    if (slo.has(key) && slo.number(key) < 0) slo.fail(key, "must not be negative");
  if (!c.slo.throughput && c.slo.p99_ms == 0 && c.slo.ttft_p99_ms == 0 && c.slo.itl_p99_ms == 0)
    slo.fail("p99_ms", "must be a positive target for a class that is not a throughput class");
  c.capacity_qps = r.number("capacity_qps");
  if (c.capacity_qps < 0) r.fail("capacity_qps", "must not be negative");
  if (r.has("capacity_tokens_per_s")) c.capacity_tokens_per_s = r.number("capacity_tokens_per_s");
  c.chosen = read_setting(r.child("chosen"));
  for (const Reader& k : r.items("candidates")) {
    Candidate cand;
    cand.setting = read_setting(k.child("setting"));
    cand.predicted_qps = k.number("predicted_qps");
    cand.capacity_qps = k.number("capacity_qps");
    for (const Reader& p : k.items("curve")) {
      CurvePoint pt;
      pt.offered_qps = p.number("offered_qps");
      pt.achieved_qps = p.number("achieved_qps");
      pt.p50_ms = p.number("p50_ms");
      pt.p99_ms = p.number("p99_ms");
      pt.utilisation = p.number("utilisation");
      pt.mean_batch = p.number("mean_batch");
      pt.errors = p.integer("errors");
      if (pt.errors < 0) p.fail("errors", "must not be negative");
      if (p.has("useful_tokens_per_s")) {  // absent from records written before token metrics
        pt.useful_tokens_per_s = p.number("useful_tokens_per_s");
        pt.padding = p.number("padding");
        pt.bucket_padding = p.number("bucket_padding");
      }
      if (p.has("ttft_p99_ms")) {  // a generative point
        pt.ttft_p50_ms = p.number("ttft_p50_ms");
        pt.ttft_p99_ms = p.number("ttft_p99_ms");
        pt.itl_p50_ms = p.number("itl_p50_ms");
        pt.itl_p99_ms = p.number("itl_p99_ms");
        pt.output_tokens_per_s = p.number("output_tokens_per_s");
      }
      if (!cand.curve.empty() && pt.offered_qps < cand.curve.back().offered_qps)
        p.fail("offered_qps", "must not be below the previous point's (curves ascend)");
      cand.curve.push_back(pt);
    }
    c.candidates.push_back(std::move(cand));
  }
  return c;
}

}  // namespace

json tuned_record_json(const TunedRecord& r) {
  json request = json::object();
  for (const auto& [name, dims] : r.request) request[name] = dims;
  json classes = json::array();
  for (const ClassRecord& c : r.classes) classes.push_back(class_json(c, r.generative));
  json matrix = json::array();
  for (const MatrixTiming& m : r.matrix)
    matrix.push_back({{"rows", m.rows}, {"option", m.option}, {"ms", m.ms}, {"chosen", m.chosen}, {"rounds", m.rounds},
                      {"wins", m.wins}, {"ratio", m.ratio}, {"ratio_mad", m.ratio_mad}});
  json j = {{"model", r.model},       {"model_hash", r.model_hash}, {"machine", r.machine},
            {"threads", r.threads},   {"request", request},         {"arrivals", r.arrivals},
            {"duration_s", r.duration_s}, {"interrupted", r.interrupted}, {"classes", classes},
            {"matrix", matrix}};
  j["baseline"] = r.baseline ? class_json(*r.baseline, r.generative) : json(nullptr);
  if (r.max_length > 0) j["lengths"] = {r.min_length, r.max_length};
  if (r.packed) j["packed"] = true;
  if (r.generative) {
    j["generative"] = true;
    j["output_tokens"] = r.output_tokens;
  }
  return j;
}

TunedRecord tuned_record_from_json(const json& j, const std::string& source) {
  Reader r(j, "tuned", source);
  TunedRecord t;
  t.model = r.text("model");
  t.model_hash = r.text("model_hash");
  t.machine = r.text("machine");
  const int64_t threads = r.integer("threads");
  if (threads < 1 || threads > 1024) r.fail("threads", "must be in [1, 1024]");  // --k8s wrote cpu: "-2"
  t.threads = static_cast<int>(threads);
  for (const auto& [name, dims] : r.at("request").items()) {
    Reader d(r.at("request"), "tuned.request", source);
    for (const Reader& x : d.items(name)) {
      double v = 0;
      if (x.raw().is_number()) v = x.raw().get<double>();
      else if (!x.raw().is_string() || (v = std::atof(x.raw().get<std::string>().c_str())) <= 0) d.fail(name, "must list dims");
      t.request[name].push_back(static_cast<int64_t>(v));
    }
  }
  t.arrivals = r.text("arrivals");
  t.duration_s = r.number("duration_s");
  t.interrupted = r.flag("interrupted");
  if (r.has("lengths")) {  // absent: every request had the record's request dims
    std::vector<Reader> l = r.items("lengths");
    if (l.size() != 2) r.fail("lengths", "must be [min, max]");
    t.min_length = l[0].integer_value();
    t.max_length = l[1].integer_value();
    if (t.min_length < 1 || t.max_length < t.min_length) r.fail("lengths", "must be [min, max] with 1 <= min <= max");
  }
  t.packed = r.has("packed") && r.flag("packed");
  t.generative = r.has("generative") && r.flag("generative");
  if (t.generative && (t.output_tokens = r.integer("output_tokens")) < 1) r.fail("output_tokens", "must be at least 1");
  for (const Reader& c : r.items("classes")) {
    t.classes.push_back(read_class(c));
    for (size_t i = 0; i + 1 < t.classes.size(); ++i)
      if (t.classes[i].name == t.classes.back().name) c.fail("name", "'" + t.classes.back().name + "' names an earlier class too");
  }
  if (r.has("baseline") && !r.at("baseline").is_null()) t.baseline = read_class(r.child("baseline"));
  for (const Reader& m : r.items("matrix")) {
    MatrixTiming timing{m.integer("rows"), m.text("option"), m.number("ms"), m.flag("chosen")};
    if (m.has("rounds")) {  // the evidence; absent from records written before the rounds
      timing.rounds = m.integer("rounds");
      timing.wins = m.integer("wins");
      timing.ratio = m.number("ratio");
      timing.ratio_mad = m.number("ratio_mad");
    }
    t.matrix.push_back(std::move(timing));
  }
  return t;
}

json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.Scalar()] = yaml_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar: return node.Scalar();
    default: return nullptr;
  }
}

}  // namespace fusor::tune

namespace fusor::tune {

std::string tuned_record_json_text(const TunedRecord& record) { return tuned_record_json(record).dump(); }

}  // namespace fusor::tune
