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

}  // namespace fusor::serve
