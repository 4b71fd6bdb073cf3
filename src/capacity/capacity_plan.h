// fusor plan: how many instances a target rate needs, and what each will see, read off the
// latency-throughput curve fusor tune measured for a class's chosen setting (tune/tuned_record.h).
// Nothing here is estimated from a model of the server: capacity, utilisation and latency are
// linear interpolations between measured points, and never extrapolate beyond the last one.
//
//   capacity  = the highest offered rate at which p99 <= target: between the last good point
//               (p99 within, no errors, achieved >= 0.95 x offered) and the first one beyond
//               the target, p99 is interpolated linearly; when every point is good, the highest
//               measured rate (no more than the candidate's capacity_qps if the target is the
//               SLO's or tighter).
//   instances = ceil(qps / (capacity x (1 - headroom))), at least 1.
//   predicted = utilisation, p50, p99 interpolated at qps / instances; below the first point,
//               utilisation scales from 0 and the latencies are the first point's.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tune/tuned_record.h"

namespace fusor::capacity {

struct PlanRequest {
  double qps = 0;                 // total rate to serve, > 0
  std::string class_name;         // empty: the first latency class, else the first class
  std::optional<double> p99_ms;   // empty: the class's SLO p99
  double headroom = 0.3;          // fraction of capacity kept free, in [0, 0.95)
  double cost_per_hour = 0;       // per instance; 0: no cost given
};

struct CapacityPlan {
  std::string class_name;
  double qps = 0;
  double p99_target_ms = 0;       // 0: the class has no latency bound and none was given
  double headroom = 0;
  double capacity_qps_per_instance = 0;
  int64_t instances = 1;
  double per_instance_qps = 0;
  double utilisation = 0, p50_ms = 0, p99_ms = 0;  // predicted at per_instance_qps
  double cost_per_hour = 0, cost_per_hour_total = 0, cost_per_million = 0;  // 0: no cost given
  int threads_per_instance = 1;
  tune::Setting setting;
  std::vector<std::string> manifests;  // file names written by --k8s, filled by the caller
  // Where the numbers came from, for the table and the manifests' comments.
  std::string model, machine;
  std::string capacity_basis;     // one line: which points bound the capacity
};

// Throws fusor::Error (one line) on a request out of range, an unknown class (naming the known
// ones), a class without a measured curve, or a curve that never meets the p99 target.
CapacityPlan plan_capacity(const tune::TunedRecord& record, const PlanRequest& request);

// The class plan_capacity picks when request.class_name is empty; null when there is none.
const tune::ClassRecord* default_plan_class(const tune::TunedRecord& record);

// Requests in one instance at its planned load, by Little's law: per_instance_qps x p50 (the
// mean-latency estimate), rounded up, at least 1. The HPA's queue-metric target.
int64_t planned_requests_in_flight(const CapacityPlan& plan);

// At most two decimals, trailing zeros dropped (9.1, 20, 131.46): the plan's numbers in its
// table and manifests. (The onboard report writes significant digits: report/number_text.h.)
std::string two_decimals(double x);

// The plan as JSON with exactly the fields the onboard report reads (docs/plan.md).
nlohmann::json capacity_plan_json(const CapacityPlan& plan);
// A readable summary for a terminal: a few lines and a small table.
std::string capacity_plan_table(const CapacityPlan& plan);

}  // namespace fusor::capacity
