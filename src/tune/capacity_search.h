// The capacity search for one setting, on any serving path that can measure an open-loop point
// (the encoder batcher's LoadBench, the generation scheduler's GenerationBench): it starts below
// a predicted capacity (or below a measured ceiling, when the prediction is above it), climbs while points meet the SLO, backs off while they fail (the first
// failures measured twice), then bisects between the best pass and the lowest fail until they
// are within a run's noise.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>

#include "fusor/tuned_record.h"

namespace fusor::tune {

// One open-loop run of `duration_s` at `rate_qps`, arrivals drawn from `seed`.
using MeasurePoint = std::function<CurvePoint(double rate_qps, double duration_s, uint64_t seed)>;

// `ceiling_qps` (0: none measured): the most the serving path answered when kept busy; no rate
// above it can pass, so the search starts below it. `on_point` sees each point as it is measured. Returns with what it has when `stop` is set (a
// point cut short is dropped); the curve ascends, and capacity_qps is measured_capacity's.
Candidate search_capacity(const MeasurePoint& measure, const Setting& setting, const Slo& slo, double predicted_qps,
                          double ceiling_qps, double duration_s, const std::atomic<bool>& stop,
                          const std::function<void(const CurvePoint&)>& on_point);

// Points the search measures at most (for progress estimates), and failed points it measures
// again while none has passed (a stall of a shared machine; capacity_search.cc).
inline constexpr int kMaxSearchPoints = 6;
inline constexpr int kMaxRemeasures = 2;
// A point runs until about this many requests were sent (a p99 needs a few hundred), between its
// duration and 4x the duration.
inline constexpr double kMinRequestsPerPoint = 300;

}  // namespace fusor::tune
