#include "serve/batch_window.h"

#include <algorithm>

namespace fusor::serve {

FormingBatch::Clock::time_point batch_closes_at(const FormingBatch& b) {
  if (b.rows >= b.target) return b.oldest;
  const auto due = b.oldest + b.window;
  if (!b.adaptive || b.idle_contexts <= 0) return due;
  if (!b.expected_gap) return b.oldest;
  return due - std::clamp(*b.expected_gap, FormingBatch::Clock::duration::zero(), b.window);
}

}  // namespace fusor::serve
