#include "serve/batch_window.h"

#include <algorithm>

namespace fusor::serve {

FormingBatch::Clock::time_point batch_closes_at(const FormingBatch& b) {
  if (b.rows >= b.target) return b.oldest;
  const auto due = b.oldest + b.window;
  if (!b.adaptive || b.idle_contexts <= 0) return due;
  if (!b.expected_gap) return b.oldest;
  auto closes = due - std::clamp(*b.expected_gap, FormingBatch::Clock::duration::zero(), b.window);
  if (b.last_arrival && b.silence_limit) closes = std::min(closes, std::max(b.oldest, *b.last_arrival + *b.silence_limit));
  if (b.run_time) closes = std::min(closes, std::max(b.oldest, b.hold_began + *b.run_time));
  return closes;
}

FormingBatch::Clock::duration next_run_time(FormingBatch::Clock::duration average, FormingBatch::Clock::duration computed) {
  using Duration = FormingBatch::Clock::duration;
  if (average <= Duration::zero()) return computed;  // the first batch
  if (computed <= Duration::zero()) return average;   // nothing ran (every request failed)
  return average + (std::min(computed, 2 * average) - average) / 8;
}

}  // namespace fusor::serve
