// A discrete-event model of one traffic class in the serving batcher (serve/batcher.h): FIFO
// arrivals of one row each, a batch that closes when serve::batch_closes_at says (the batcher's
// own rule: full, or with the adaptive window as soon as a context is idle and no batch-mate is
// expected before the window ends, else when its oldest request has waited the window), padded to
// its batch-size bucket, run by a free one of N execution contexts for the measured service time
// of that bucket. Cheap enough to price every (window, max_batch, contexts) setting, so the tuner
// measures only the few the model ranks best.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
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

// cls.adaptive_window: the event-driven model below; the fixed window: a closed form that gives
// the same batches (in exact double seconds, and faster).
SimResult simulate_batcher(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                           const std::vector<double>& arrivals_s);

// The event-driven model for either window: the next event is the next arrival, a context
// freeing up, or the forming batch's close time, and at each the batch's close time is asked
// again, as the batcher asks it, of a serve::ArrivalRate fed the arrivals and the held time the
// batcher would have seen. Times are steady_clock time points (whole nanoseconds).
SimResult simulate_batcher_events(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                  const std::vector<double>& arrivals_s);

// The event loop both batcher models share (rows here, tokens in tune/token_sweep.h). Request i
// arrives at arrivals_s[i] with tokens[i % size] tokens (1 each when `tokens` is empty).
struct SimRequest {
  std::chrono::steady_clock::time_point arrived;
  int64_t tokens = 1;
};
struct BatchRule {
  int64_t target = 1;  // FormingBatch::target: the size that fills a batch
  // The forming batch's size, in the target's units, with these requests queued.
  std::function<int64_t(const std::deque<SimRequest>& queue)> size;
  // A closing batch: removes the requests it runs from `queue`, appends their arrival times to
  // `taken`, and returns how long it runs.
  std::function<std::chrono::steady_clock::duration(std::deque<SimRequest>& queue,
                                                    std::vector<std::chrono::steady_clock::time_point>& taken)>
      take;
};
SimResult simulate_events(const TrafficClass& cls, int64_t contexts, const BatchRule& rule,
                          const std::vector<double>& arrivals_s, const std::vector<int64_t>& tokens = {});

// The highest Poisson rate whose simulated p99 stays within `p99_ms` (bisection, fixed seeds).
double simulated_capacity(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times, double p99_ms);

}  // namespace fusor::tune
