// The open-loop load generator: requests go out at their scheduled arrival times whether or not
// earlier ones have been answered, as real users send them. Latency counts from the scheduled
// time, so a generator that falls behind cannot hide queueing (no coordinated omission).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "fusor/tune.h"  // percentile

namespace fusor::tune {

// Sends one request and returns at once; `done(ok)` runs exactly once, on any thread.
using Submit = std::function<void(std::function<void(bool ok)> done)>;

struct LoadResult {
  std::vector<double> latencies_ms;  // of the requests answered without error
  int64_t sent = 0, errors = 0;
  double send_s = 0;   // from the start to the last send
  double total_s = 0;  // from the start to the last answer
  bool overloaded = false;  // sending stopped early: more than max_outstanding were unanswered
};

// Runs the schedule (seconds from now, ascending) and waits for every answer. Stops sending
// early when `stop` becomes true or when more than `max_outstanding` requests are unanswered
// (the queue is clearly growing without bound, so the rest would only measure the backlog).
LoadResult run_open_loop(const std::vector<double>& arrivals_s, const Submit& submit, const std::atomic<bool>& stop,
                         int64_t max_outstanding);

}  // namespace fusor::tune
