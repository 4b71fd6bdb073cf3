// The saturation probe: a closed loop that keeps a fixed number of requests unanswered, so the
// serving path never waits for work. What it answers per second is the most any open-loop rate
// can get, whatever the service-time model predicts (which leaves out the serving path's own
// cost per request: on a model of microseconds that cost is nearly all of it).
#pragma once
#include <atomic>
#include <cstdint>

#include "tune/open_loop.h"  // Submit

namespace fusor::tune {

struct ClosedLoopResult {
  int64_t answered = 0, errors = 0;
  double seconds = 0;  // from the first send to the last answer
  double answered_qps() const { return seconds > 0 ? static_cast<double>(answered) / seconds : 0; }
};

// Keeps `in_flight` requests unanswered for `duration_s` (each answer lets the next one go), then
// waits for the rest. Stops sending early when `stop` becomes true.
ClosedLoopResult run_closed_loop(const Submit& submit, int64_t in_flight, double duration_s,
                                 const std::atomic<bool>& stop);

}  // namespace fusor::tune
