// When a forming batch closes: the adaptive, work-conserving batch window. A pure function of the
// batch's state at one instant, so every case is tested without a clock (serve_batch_window_test).
//
// The batch closes at once when it is full. Otherwise its oldest request waits at most the
// window (batch_window_ms), and with the adaptive window only as long as waiting can help:
//  - no context idle: the batch could not run anyway, so it keeps collecting until the window
//    ends (a context that frees up looks again);
//  - a context idle: it waits while the next arrival of its group is expected before the window
//    ends, that is until `window - expected gap` after the oldest arrival. Arrivals never seen
//    (no gap yet) or a gap as long as the window: it closes at once. Dense arrivals (gap near
//    0): it waits the whole window and fills.
// With Poisson arrivals this is exactly "dispatch when no further request is expected within the
// remaining window"; serve/arrival_rate.h says why the expected gap is measured while held.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>

namespace fusor::serve {

struct FormingBatch {
  using Clock = std::chrono::steady_clock;
  Clock::time_point oldest;     // the oldest request's arrival
  Clock::duration window{};     // batch_window_ms: the longest the oldest request waits
  int64_t rows = 0;             // rows gathered in the oldest request's group
  int64_t target = 1;           // rows that fill the batch (max_batch or the largest preferred size)
  int64_t idle_contexts = 0;    // execution contexts not running a batch
  std::optional<Clock::duration> expected_gap;  // to the group's next arrival; none: unknown
  // With a context idle, the batch also closes once its group has been silent this long since its
  // last arrival (serve/arrival_rate.h, silence_limit): closed-loop clients fewer than a batch,
  // every one of them waiting in it, used to hold each batch most of the window. None: no limit.
  std::optional<Clock::time_point> last_arrival;
  std::optional<Clock::duration> silence_limit;
  // An idle context holds the batch at most `run_time` (a batch's recent run time) from
  // `hold_began` (when it began to hold, or now): holding a context idle for a batch-mate longer
  // than running the batch would take costs more than it saves (a model of 30 us held four
  // closed-loop clients for ~1 ms each).
  std::optional<Clock::duration> run_time;
  Clock::time_point hold_began;
  bool adaptive = true;         // false: the fixed window (the batch waits for it or fills)
};

// When the batch closes if nothing changes (no arrival, no context freeing up): the batcher
// dispatches it once this is at or before now. Never later than oldest + window.
FormingBatch::Clock::time_point batch_closes_at(const FormingBatch& b);

// The next `run_time` after a batch computed for `computed`: a moving average (1/8) of compute
// time, the model's run only. Not the answers' hand-off: that grows with the batch (each answer
// wakes its client's thread), so a cap learnt from it held every group together once one had
// formed, and under four closed-loop clients the server flipped between 3,600 and 6,100 req/s. A
// sample counts as at most twice the average, so one stall cannot hold the next batches long.
FormingBatch::Clock::duration next_run_time(FormingBatch::Clock::duration average, FormingBatch::Clock::duration computed);

}  // namespace fusor::serve
