// fusor plan: how many instances a target rate needs, and what each will see, read off the
// latency-throughput curve fusor tune measured for a class's chosen setting (fusor/tuned_record.h).
// Nothing here is estimated from a model of the server: capacity, utilisation and latency are
// linear interpolations between measured points, and never extrapolate beyond the last one.
//
//   capacity  = the highest offered rate at which p99 <= target: the highest good point
//               (p99 within, no errors, achieved >= 0.95 x offered) where the curve's trend is
//               within too (tune::good_prefix); between it and the next one, beyond the target,
//               p99 is interpolated linearly; at the highest measured rate, no more than the
//               candidate's capacity_qps if the target is the SLO's or tighter.
//   instances = ceil(qps / (capacity x (1 - headroom))), at least 1.
//   predicted = utilisation, p50, p99 interpolated at qps / instances; below the first point,
//               utilisation scales from 0 and the latencies are the first point's.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fusor/capacity.h"
#include "fusor/tuned_record.h"

namespace fusor::capacity {

// PlanRequest, CapacityPlan, plan_capacity and the table are public (fusor/capacity.h).

// The class plan_capacity picks when request.class_name is empty; null when there is none.
const tune::ClassRecord* default_plan_class(const tune::TunedRecord& record);

// Requests in one instance at its planned load, by Little's law: per_instance_qps x p50 (the
// mean-latency estimate), rounded up, at least 1. The HPA's queue-metric target.
int64_t planned_requests_in_flight(const CapacityPlan& plan);

// At most two decimals, trailing zeros dropped (9.1, 20, 131.46), and 1e+20 from 1e15 up: the
// plan's numbers in its table and manifests. (The onboard report writes significant digits: report/number_text.h.)
std::string two_decimals(double x);

// The plan as JSON with exactly the fields the onboard report reads (docs/plan.md).
nlohmann::json capacity_plan_json(const CapacityPlan& plan);

}  // namespace fusor::capacity
