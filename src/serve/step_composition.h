// What one step of the generation scheduler feeds (serve/generation_scheduler.h), as a pure
// function of the running sequences, so the rule is testable on its own.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace fusor::serve {

struct StepCandidate {
  int64_t cls = 0;            // its class, any id that tells classes apart
  int64_t priority = 0;       // its class's (lower is better)
  int64_t prefill_chunk = 0;  // its class's prompt tokens per step (0: no limit beyond the step)
  int64_t left = 0;           // tokens not yet fed: 1 is the next token (decode), more a prompt
};

// The tokens each candidate feeds this step (0: none); `order` is best class first, then earliest
// admitted. Within `step_tokens`:
//   - decode tokens first, so a sequence's next token never waits behind a prompt of its own or
//     a worse class; but a step that prefills a better class's prompt carries no decode of a
//     worse class (that step gives an interactive request its first token: it stays short, and
//     the worse class's next tokens wait one step);
//   - then prompt chunks, best class first, at most prefill_chunk tokens per class, and no prompt
//     of a worse class beside a better class's.
std::vector<int64_t> compose_tokens(std::span<const StepCandidate> order, int64_t step_tokens);

// A class as the chunk rule sees it: its priority and limits, and whether it is busy (a request
// waiting or running, or one arrived within the last second).
struct ClassActivity {
  int64_t priority = 0;
  int64_t prefill_chunk = 0;
  int64_t prefill_chunk_contended = 0;  // 0: prefill_chunk
  bool busy = false;
};

// The prompt tokens `cls` may add to one step (its StepCandidate::prefill_chunk): its
// prefill_chunk_contended while some class of better priority in `classes` is busy, so the step
// an arriving interactive request waits for is short; else its prefill_chunk.
int64_t prefill_chunk_for(const ClassActivity& cls, std::span<const ClassActivity> classes);

}  // namespace fusor::serve
