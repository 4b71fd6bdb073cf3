#include "capacity/capacity_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "fusor/error.h"

namespace fusor::capacity {

using tune::Candidate;
using tune::ClassRecord;
using tune::CurvePoint;
using tune::TunedRecord;

namespace {

double lerp(double x0, double y0, double x1, double y1, double x) {
  return x1 == x0 ? y1 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

const ClassRecord& pick_class(const TunedRecord& record, const std::string& name) {
  if (record.classes.empty()) throw Error("the tuned record has no classes");
  if (name.empty()) return *default_plan_class(record);
  for (const ClassRecord& c : record.classes)
    if (c.name == name) return c;
  std::string known;
  for (const ClassRecord& c : record.classes) known += (known.empty() ? "" : ", ") + c.name;
  throw Error("unknown class '" + name + "'; the tuned record has: " + known);
}

const Candidate& chosen_curve(const ClassRecord& c) {
  for (const Candidate& k : c.candidates)
    if (k.setting == c.chosen && !k.curve.empty()) return k;
  throw Error("class " + c.name + " has no measured curve for its chosen setting");
}

std::string slo_text(const tune::Slo& slo) {
  std::string out;
  for (auto [name, ms] : {std::pair{"p99", slo.p99_ms}, {"TTFT p99", slo.ttft_p99_ms}, {"ITL p99", slo.itl_p99_ms}})
    if (ms > 0 && std::isfinite(ms)) out += (out.empty() ? "" : ", ") + std::string(name) + " <= " + two_decimals(ms) + " ms";
  return out.empty() ? "no latency bound" : out;
}

// The highest rate within `slo` (tune::good_prefix, the tuner's own rule); sets `basis` to the
// points it rests on. Between that point and the next one, past the p99 target alone, p99 is
// interpolated; a generative model's curve ends at the point (a throughput class's too, whose
// SLO sets no TTFT or ITL target).
double capacity_of(const ClassRecord& c, const Candidate& k, const tune::Slo& slo, bool generative, std::string& basis) {
  const auto& curve = k.curve;
  const double target_ms = slo.p99_ms > 0 ? slo.p99_ms : std::numeric_limits<double>::infinity();
  const size_t n_good = tune::good_prefix(curve, slo);
  const std::string target = slo_text(slo);
  if (n_good == 0 && generative)
    throw Error("the tuned curve for class " + c.name + " never meets " + target + "; its first point (" +
                two_decimals(curve[0].offered_qps) + " req/s) has TTFT p99 " + two_decimals(curve[0].ttft_p99_ms) +
                " ms, ITL p99 " + two_decimals(curve[0].itl_p99_ms) + " ms, " + std::to_string(curve[0].errors) + " errors");
  if (n_good == 0) {
    auto alone = std::find_if(curve.rbegin(), curve.rend(), [&](const CurvePoint& p) { return tune::meets(p, slo); });
    if (alone != curve.rend())
      throw Error("the tuned curve for class " + c.name + " has no rate within " + target + " that its other points bear out: " +
                  two_decimals(alone->offered_qps) + " qps met it alone (p99 " + two_decimals(alone->p99_ms) +
                  " ms), above lower rates that missed it or had errors");
    auto best = std::min_element(curve.begin(), curve.end(),
                                 [](const CurvePoint& a, const CurvePoint& b) { return a.p99_ms < b.p99_ms; });
    if (best->p99_ms > target_ms)
      throw Error("the tuned curve for class " + c.name + " never reaches " + target + "; lowest measured p99 is " +
                  two_decimals(best->p99_ms) + " ms at " + two_decimals(best->offered_qps) + " qps");
    throw Error("the tuned curve for class " + c.name + " has no point within " + target +
                " that answers every request and keeps up with the offered rate (first point: " +
                two_decimals(curve[0].offered_qps) + " qps offered, " + two_decimals(curve[0].achieved_qps) +
                " achieved, " + std::to_string(curve[0].errors) + " errors)");
  }
  const CurvePoint& last = curve[n_good - 1];
  // Not toward a point that had errors or fell behind (it queued: its p99 says nothing of a rate
  // it could carry).
  if (!generative && n_good < curve.size() && curve[n_good].p99_ms > target_ms && !tune::overloaded(curve[n_good])) {
    const CurvePoint& beyond = curve[n_good];
    basis = "interpolated between p99 " + two_decimals(last.p99_ms) + " ms at " + two_decimals(last.offered_qps) +
            " qps and " + two_decimals(beyond.p99_ms) + " ms at " + two_decimals(beyond.offered_qps) + " qps";
    return lerp(last.p99_ms, last.offered_qps, beyond.p99_ms, beyond.offered_qps, target_ms);
  }
  double cap = last.offered_qps;
  basis = n_good == curve.size()
              ? "the highest measured rate is within " + target + ": " + two_decimals(cap) + " qps"
              : "the highest point within " + target + " that keeps up without errors: " + two_decimals(cap) + " qps";
  // The tuner's own verdict bounds an unmeasured rise when its SLO is the target or looser.
  const bool tighter = target_ms <= (c.slo.p99_ms > 0 ? c.slo.p99_ms : std::numeric_limits<double>::infinity());
  if (k.capacity_qps > 0 && k.capacity_qps < cap && tighter) {
    cap = k.capacity_qps;
    basis += ", bounded by the tuner's capacity_qps " + two_decimals(cap);
  }
  return cap;
}

// The point a curve predicts at `qps`: its latencies and utilisation interpolated between the
// measured points around it; below the first point, utilisation scales from 0 and the latencies
// are the first point's. The latencies of the points before the first with errors are their
// non-decreasing fit, as capacity_of judges them (tune::good_prefix): a slow outlier between two
// faster points would otherwise predict a p99 past the target that the capacity was sized for.
CurvePoint predict(std::vector<CurvePoint> curve, double qps) {
  static constexpr double CurvePoint::*kInterpolated[] = {&CurvePoint::utilisation, &CurvePoint::p50_ms,
                                                          &CurvePoint::p99_ms,      &CurvePoint::ttft_p99_ms,
                                                          &CurvePoint::itl_p99_ms};
  static constexpr double CurvePoint::*kLatencies[] = {&CurvePoint::p50_ms, &CurvePoint::p99_ms,
                                                       &CurvePoint::ttft_p99_ms, &CurvePoint::itl_p99_ms};
  const size_t clean = static_cast<size_t>(
      std::find_if(curve.begin(), curve.end(), [](const CurvePoint& p) { return p.errors > 0; }) - curve.begin());
  for (auto field : kLatencies) {
    std::vector<double> values;
    for (size_t i = 0; i < clean; ++i) values.push_back(curve[i].*field);
    const std::vector<double> fit = tune::nondecreasing_fit(values);
    for (size_t i = 0; i < clean; ++i) curve[i].*field = fit[i];
  }
  const CurvePoint& first = curve.front();
  if (qps <= first.offered_qps) {
    CurvePoint p = first;
    if (first.offered_qps > 0) p.utilisation = first.utilisation * qps / first.offered_qps;
    return p;
  }
  for (size_t i = 1; i < curve.size(); ++i) {
    const CurvePoint &a = curve[i - 1], &b = curve[i];
    if (qps > b.offered_qps) continue;
    CurvePoint p = b;
    for (auto field : kInterpolated) p.*field = lerp(a.offered_qps, a.*field, b.offered_qps, b.*field, qps);
    return p;
  }
  return curve.back();  // unreachable: the load never exceeds the capacity
}

}  // namespace

const ClassRecord* default_plan_class(const TunedRecord& record) {
  for (const ClassRecord& c : record.classes)
    if (!c.slo.throughput) return &c;
  return record.classes.empty() ? nullptr : &record.classes.front();
}

CapacityPlan plan_capacity(const TunedRecord& record, const PlanRequest& request) {
  PlanRequest req = request;
  if (req.tokens_per_s != 0) {
    if (!record.generative) throw Error("--tokens-per-s is for a generative model's record; give --qps");
    if (req.qps != 0) throw Error("give --qps or --tokens-per-s, not both");
    if (!(req.tokens_per_s > 0) || !std::isfinite(req.tokens_per_s))
      throw Error("--tokens-per-s must be a positive number, got " + two_decimals(req.tokens_per_s));
    req.qps = req.tokens_per_s / static_cast<double>(record.output_tokens);
  }
  if (!(req.qps > 0) || !std::isfinite(req.qps))
    throw Error("--qps must be a positive number, got " + two_decimals(req.qps));
  if (!headroom_in_range(req.headroom))
    throw Error("--headroom must be in [0, " + two_decimals(kMaxHeadroom) + "), got " + two_decimals(req.headroom));
  if (!(req.cost_per_hour >= 0) || !std::isfinite(req.cost_per_hour))
    throw Error("--cost-per-hour must be a non-negative number");
  if (req.p99_ms && !(*req.p99_ms > 0 && std::isfinite(*req.p99_ms))) throw Error("--p99 must be a positive duration");
  const ClassRecord& c = pick_class(record, req.class_name);
  const Candidate& k = chosen_curve(c);
  // Two runs may offer the same rate (the tuner counts the arrivals actually sent; a closed loop
  // offers what it carries), so equal neighbours are a valid curve; interpolation takes the later.
  for (size_t i = 1; i < k.curve.size(); ++i)
    if (!(k.curve[i].offered_qps >= k.curve[i - 1].offered_qps))
      throw Error("the tuned curve for class " + c.name + " is not in ascending offered_qps");

  CapacityPlan p;
  p.class_name = c.name;
  p.qps = req.qps;
  p.headroom = req.headroom;
  p.p99_target_ms = req.p99_ms ? *req.p99_ms : c.slo.p99_ms;
  tune::Slo slo = c.slo;
  slo.p99_ms = p.p99_target_ms;
  if (!record.generative) slo.ttft_p99_ms = slo.itl_p99_ms = 0;
  p.capacity_qps_per_instance = capacity_of(c, k, slo, record.generative, p.capacity_basis);
  if (!(p.capacity_qps_per_instance > 0))
    throw Error("the tuned curve for class " + c.name + " gives no positive capacity");
  // The epsilon keeps an exact fit (700 qps at 70 usable) from rounding up to one more.
  const double usable = p.capacity_qps_per_instance * (1 - req.headroom);
  const double instances = std::ceil(req.qps / usable - 1e-9);
  // A Deployment's replicas are an int32; past that the count also overflowed int64 (1e30 qps
  // planned 1 instance).
  if (!(instances <= std::numeric_limits<int32_t>::max()))
    throw Error("class " + c.name + ": " + two_decimals(req.qps) + " qps at " + two_decimals(usable) +
                " usable per instance needs more instances than a Deployment's replicas can count");
  p.instances = std::max<int64_t>(1, static_cast<int64_t>(instances));
  p.per_instance_qps = req.qps / static_cast<double>(p.instances);
  const CurvePoint pr = predict(k.curve, p.per_instance_qps);
  p.utilisation = pr.utilisation;
  p.p50_ms = pr.p50_ms;
  p.p99_ms = pr.p99_ms;
  if (record.generative) {
    p.generative = true;
    p.output_tokens = record.output_tokens;
    const double tokens = static_cast<double>(record.output_tokens);
    p.capacity_tokens_per_s_per_instance = p.capacity_qps_per_instance * tokens;
    p.per_instance_tokens_per_s = p.per_instance_qps * tokens;
    p.ttft_p99_ms = pr.ttft_p99_ms;
    p.itl_p99_ms = pr.itl_p99_ms;
    p.ttft_target_ms = slo.ttft_p99_ms;
    p.itl_target_ms = slo.itl_p99_ms;
  }
  p.cost_per_hour = req.cost_per_hour;
  p.cost_per_hour_total = static_cast<double>(p.instances) * req.cost_per_hour;
  p.cost_per_million = p.cost_per_hour_total / (req.qps * 3600) * 1e6;
  p.threads_per_instance = record.threads;
  p.setting = c.chosen;
  p.model = record.model;
  p.machine = record.machine;
  return p;
}

std::string two_decimals(double x) {
  char buf[64];
  // From 1e15 up a double's digits are not all exact (1e300 printed 63 of them, cut by buf): an
  // exponent instead.
  if (std::fabs(x) >= 1e15) {
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.2f", x);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

int64_t planned_requests_in_flight(const CapacityPlan& plan) {
  double in_flight = plan.per_instance_qps * plan.p50_ms / 1000;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(in_flight - 1e-9)));
}

nlohmann::json capacity_plan_json(const CapacityPlan& p) {
  nlohmann::json j = {{"class", p.class_name},
          {"qps", p.qps},
          {"p99_target_ms", p.p99_target_ms},
          {"headroom", p.headroom},
          {"capacity_qps_per_instance", p.capacity_qps_per_instance},
          {"instances", p.instances},
          {"per_instance_qps", p.per_instance_qps},
          {"predicted", {{"utilisation", p.utilisation}, {"p50_ms", p.p50_ms}, {"p99_ms", p.p99_ms}}},
          {"cost_per_hour", p.cost_per_hour},
          {"cost_per_hour_total", p.cost_per_hour_total},
          {"cost_per_million", p.cost_per_million},
          {"threads_per_instance", p.threads_per_instance},
          {"setting",
           {{"batch_window_ms", p.setting.batch_window_ms},
            {"max_batch", p.setting.max_batch},
            {"execution_contexts", p.setting.execution_contexts}}},
          {"manifests", p.manifests}};
  if (p.generative)
    j["generative"] = {{"output_tokens", p.output_tokens},
                       {"capacity_tokens_per_s_per_instance", p.capacity_tokens_per_s_per_instance},
                       {"per_instance_tokens_per_s", p.per_instance_tokens_per_s},
                       {"setting",
                        {{"step_tokens", p.setting.step_tokens},
                         {"max_running", p.setting.max_running},
                         {"prefill_chunk", p.setting.prefill_chunk}}},
                       {"ttft_target_ms", p.ttft_target_ms},
                       {"itl_target_ms", p.itl_target_ms},
                       {"predicted", {{"ttft_p99_ms", p.ttft_p99_ms}, {"itl_p99_ms", p.itl_p99_ms}}}};
  return j;
}

std::string capacity_plan_table(const CapacityPlan& p) {
  std::string out = "Capacity plan for class " + p.class_name + " at " + two_decimals(p.qps) + " qps";
  if (!p.model.empty()) out += " (" + p.model + (p.machine.empty() ? "" : ", measured on " + p.machine) + ")";
  const tune::Slo slo{.p99_ms = p.p99_target_ms, .ttft_p99_ms = p.ttft_target_ms, .itl_p99_ms = p.itl_target_ms};
  if (p.generative)
    out += "\n  setting: step_tokens " + std::to_string(p.setting.step_tokens) + ", max_running " +
           std::to_string(p.setting.max_running) + ", prefill_chunk " + std::to_string(p.setting.prefill_chunk) + ", " +
           std::to_string(p.threads_per_instance) + " threads per instance; requests generate " +
           std::to_string(p.output_tokens) + " tokens\n";
  else
    out += "\n  setting: batch_window_ms " + two_decimals(p.setting.batch_window_ms) + ", max_batch " +
           std::to_string(p.setting.max_batch) + ", execution_contexts " + std::to_string(p.setting.execution_contexts) +
           ", " + std::to_string(p.threads_per_instance) + " threads per instance\n";
  out += "  capacity: " + two_decimals(p.capacity_qps_per_instance) + " qps per instance" +
         (p.generative ? " (" + two_decimals(p.capacity_tokens_per_s_per_instance) + " tokens/s)" : "") + " at " +
         slo_text(slo) + " (" + p.capacity_basis + ")\n\n";
  std::vector<std::pair<std::string, std::string>> rows = {
      {"instances", std::to_string(p.instances) + "  (headroom " + two_decimals(p.headroom * 100) + "%)"},
      {"load per instance", two_decimals(p.per_instance_qps) + " qps" +
                                (p.generative ? ", " + two_decimals(p.per_instance_tokens_per_s) + " tokens/s" : "")},
      {"utilisation", two_decimals(p.utilisation * 100) + "%"},
      {"p50", two_decimals(p.p50_ms) + " ms"},
      {"p99", two_decimals(p.p99_ms) + " ms"},
  };
  if (p.generative) {
    rows.push_back({"TTFT p99", two_decimals(p.ttft_p99_ms) + " ms"});
    rows.push_back({"ITL p99", two_decimals(p.itl_p99_ms) + " ms"});
  }
  if (p.cost_per_hour > 0) {
    rows.push_back(
        {"cost per hour", two_decimals(p.cost_per_hour_total) + "  (" + two_decimals(p.cost_per_hour) + " per instance)"});
    char per_million[32];
    std::snprintf(per_million, sizeof per_million, "%.4g", p.cost_per_million);
    rows.push_back({"cost per million", std::string(per_million) + "  inferences"});
  }
  for (const auto& [k, v] : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-18s %s\n", k.c_str(), v.c_str());
    out += line;
  }
  if (!p.manifests.empty()) {
    out += "\n  manifests:";
    for (const std::string& m : p.manifests) out += " " + m;
    out += "\n";
  }
  return out;
}

std::string capacity_plan_json_text(const CapacityPlan& plan) { return capacity_plan_json(plan).dump(2); }

}  // namespace fusor::capacity
