// A discrete-event model of one traffic class in the serving batcher (serve/batcher.h): FIFO
// arrivals, a batch ready when it holds max_batch requests or its oldest has waited the window,
// padded to its batch-size bucket, run by the first free of N execution contexts for the
// measured service time of that bucket. Cheap enough to price every (window, max_batch,
// contexts) setting, so the tuner measures only the few the model ranks best.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "fusor/config.h"

namespace fusor::tune {

// Measured milliseconds per batch, by padded row count; rows between or beyond the measured
// counts are interpolated or extrapolated linearly.
struct ServiceTimes {
  std::map<int64_t, double> ms_by_rows;
  double at(int64_t rows) const;
};

struct SimResult {
  double p50_ms = 0, p99_ms = 0;
  double achieved_qps = 0;
  double utilisation = 0;  // busy time / (span x contexts)
  double mean_batch = 0;
};

SimResult simulate_batcher(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                           const std::vector<double>& arrivals_s);

// The highest Poisson rate whose simulated p99 stays within `p99_ms` (bisection, fixed seeds).
double simulated_capacity(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times, double p99_ms);

}  // namespace fusor::tune
