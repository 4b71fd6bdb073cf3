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

// The highest rate within target_ms; sets `basis` to the points it rests on.
double capacity_of(const ClassRecord& c, const Candidate& k, double target_ms, std::string& basis) {
  const auto& curve = k.curve;
  size_t n_good = 0;  // the good prefix: capacity never rests on a point past a bad one
  while (n_good < curve.size() && tune::meets(curve[n_good], target_ms)) ++n_good;
  const std::string target = "p99 <= " + two_decimals(target_ms) + " ms";
  if (n_good == 0) {
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
  if (n_good < curve.size() && curve[n_good].p99_ms > target_ms && curve[n_good].errors == 0) {
    const CurvePoint& beyond = curve[n_good];
    basis = "interpolated between p99 " + two_decimals(last.p99_ms) + " ms at " + two_decimals(last.offered_qps) +
            " qps and " + two_decimals(beyond.p99_ms) + " ms at " + two_decimals(beyond.offered_qps) + " qps";
    return lerp(last.p99_ms, last.offered_qps, beyond.p99_ms, beyond.offered_qps, target_ms);
  }
  double cap = last.offered_qps;
  basis = n_good == curve.size()
              ? "every measured point is within " + target + "; the highest is " + two_decimals(cap) + " qps"
              : "the last point within " + target + " that keeps up without errors: " + two_decimals(cap) + " qps";
  // The tuner's own verdict bounds an unmeasured rise when its SLO is the target or looser.
  if (k.capacity_qps > 0 && k.capacity_qps < cap && c.slo.p99_ms > 0 && target_ms <= c.slo.p99_ms) {
    cap = k.capacity_qps;
    basis += ", bounded by the tuner's capacity_qps " + two_decimals(cap);
  }
  return cap;
}

struct Predicted {
  double utilisation, p50_ms, p99_ms;
};

Predicted predict(const std::vector<CurvePoint>& curve, double qps) {
  const CurvePoint& first = curve.front();
  if (qps <= first.offered_qps)
    return {first.offered_qps > 0 ? first.utilisation * qps / first.offered_qps : first.utilisation, first.p50_ms,
            first.p99_ms};
  for (size_t i = 1; i < curve.size(); ++i) {
    const CurvePoint &a = curve[i - 1], &b = curve[i];
    if (qps <= b.offered_qps)
      return {lerp(a.offered_qps, a.utilisation, b.offered_qps, b.utilisation, qps),
              lerp(a.offered_qps, a.p50_ms, b.offered_qps, b.p50_ms, qps),
              lerp(a.offered_qps, a.p99_ms, b.offered_qps, b.p99_ms, qps)};
  }
  const CurvePoint& last = curve.back();  // unreachable: the load never exceeds the capacity
  return {last.utilisation, last.p50_ms, last.p99_ms};
}

}  // namespace

const ClassRecord* default_plan_class(const TunedRecord& record) {
  for (const ClassRecord& c : record.classes)
    if (!c.slo.throughput) return &c;
  return record.classes.empty() ? nullptr : &record.classes.front();
}

CapacityPlan plan_capacity(const TunedRecord& record, const PlanRequest& req) {
  if (!(req.qps > 0) || !std::isfinite(req.qps))
    throw Error("--qps must be a positive number, got " + two_decimals(req.qps));
  if (!(req.headroom >= 0 && req.headroom < 0.95))
    throw Error("--headroom must be in [0, 0.95), got " + two_decimals(req.headroom));
  if (!(req.cost_per_hour >= 0) || !std::isfinite(req.cost_per_hour))
    throw Error("--cost-per-hour must be a non-negative number");
  if (req.p99_ms && !(*req.p99_ms > 0 && std::isfinite(*req.p99_ms))) throw Error("--p99 must be a positive duration");
  const ClassRecord& c = pick_class(record, req.class_name);
  const Candidate& k = chosen_curve(c);
  for (size_t i = 1; i < k.curve.size(); ++i)
    if (!(k.curve[i].offered_qps > k.curve[i - 1].offered_qps))
      throw Error("the tuned curve for class " + c.name + " is not in ascending offered_qps");

  CapacityPlan p;
  p.class_name = c.name;
  p.qps = req.qps;
  p.headroom = req.headroom;
  p.p99_target_ms = req.p99_ms ? *req.p99_ms : c.slo.p99_ms;
  const double target = p.p99_target_ms > 0 ? p.p99_target_ms : std::numeric_limits<double>::infinity();
  p.capacity_qps_per_instance = capacity_of(c, k, target, p.capacity_basis);
  if (!(p.capacity_qps_per_instance > 0))
    throw Error("the tuned curve for class " + c.name + " gives no positive capacity");
  // The epsilon keeps an exact fit (700 qps at 70 usable) from rounding up to one more.
  const double usable = p.capacity_qps_per_instance * (1 - req.headroom);
  p.instances = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(req.qps / usable - 1e-9)));
  p.per_instance_qps = req.qps / static_cast<double>(p.instances);
  Predicted pr = predict(k.curve, p.per_instance_qps);
  p.utilisation = pr.utilisation;
  p.p50_ms = pr.p50_ms;
  p.p99_ms = pr.p99_ms;
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
  return {{"class", p.class_name},
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
}

std::string capacity_plan_table(const CapacityPlan& p) {
  std::string out = "Capacity plan for class " + p.class_name + " at " + two_decimals(p.qps) + " qps";
  if (!p.model.empty()) out += " (" + p.model + (p.machine.empty() ? "" : ", measured on " + p.machine) + ")";
  out += "\n  setting: batch_window_ms " + two_decimals(p.setting.batch_window_ms) + ", max_batch " +
         std::to_string(p.setting.max_batch) + ", execution_contexts " + std::to_string(p.setting.execution_contexts) +
         ", " + std::to_string(p.threads_per_instance) + " threads per instance\n";
  out += "  capacity: " + two_decimals(p.capacity_qps_per_instance) + " qps per instance at " +
         (p.p99_target_ms > 0 ? "p99 <= " + two_decimals(p.p99_target_ms) + " ms" : "no latency bound") + " (" +
         p.capacity_basis + ")\n\n";
  std::vector<std::pair<std::string, std::string>> rows = {
      {"instances", std::to_string(p.instances) + "  (headroom " + two_decimals(p.headroom * 100) + "%)"},
      {"load per instance", two_decimals(p.per_instance_qps) + " qps"},
      {"utilisation", two_decimals(p.utilisation * 100) + "%"},
      {"p50", two_decimals(p.p50_ms) + " ms"},
      {"p99", two_decimals(p.p99_ms) + " ms"},
  };
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
