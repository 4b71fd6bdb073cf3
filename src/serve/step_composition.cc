#include "serve/step_composition.h"

#include <algorithm>
#include <limits>
#include <map>

namespace fusor::serve {

std::vector<int64_t> compose_tokens(std::span<const StepCandidate> order, int64_t step_tokens) {
  std::vector<int64_t> tokens(order.size(), 0);
  int64_t budget = step_tokens;
  int64_t best_prompt = std::numeric_limits<int64_t>::max();
  for (const StepCandidate& c : order)
    if (c.left > 1) best_prompt = std::min(best_prompt, c.priority);
  for (size_t i = 0; i < order.size(); ++i)
    if (budget > 0 && order[i].left == 1 && order[i].priority <= best_prompt) {
      tokens[i] = 1;
      --budget;
    }
  std::map<int64_t, int64_t> chunk_left;  // prompt tokens each class may still add
  int64_t prefill_priority = -1;
  for (size_t i = 0; i < order.size(); ++i) {
    const StepCandidate& c = order[i];
    if (budget <= 0 || c.left <= 1) continue;
    if (prefill_priority >= 0 && c.priority > prefill_priority) break;
    auto [it, fresh] = chunk_left.try_emplace(c.cls, c.prefill_chunk > 0 ? c.prefill_chunk : budget);
    const int64_t n = std::min({c.left, budget, it->second});
    if (n <= 0) continue;
    it->second -= n;
    prefill_priority = c.priority;
    tokens[i] = n;
    budget -= n;
  }
  return tokens;
}

int64_t prefill_chunk_for(const ClassActivity& cls, std::span<const ClassActivity> classes) {
  if (cls.prefill_chunk_contended <= 0) return cls.prefill_chunk;
  for (const ClassActivity& other : classes)
    if (other.priority < cls.priority && other.busy) return cls.prefill_chunk_contended;
  return cls.prefill_chunk;
}

}  // namespace fusor::serve
