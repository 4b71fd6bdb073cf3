// Memory planning: where each intermediate value lives in one arena per execution context.
//
// Why this shape: lifetimes come from liveness over the actual step order, so two values share
// bytes only when one is certainly dead before the other is written. A value's interval runs
// from the step that writes it to the last step that reads it or any view of it. Graph outputs
// and outputs nobody reads live to the end of the run (freeing those early is a published ORT
// bug). A kernel's scratch lives only during its step. Offsets are chosen greedily by size with
// best fit (TFLite's arena planner), 64-byte aligned. With guards on, every value's buffer is
// followed by canary bytes the executor checks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fusor {

struct Plan;

struct MemoryOptions {
  bool reuse = true;         // off: every value gets its own bytes (the naive layout)
  size_t guard_bytes = 0;    // canary bytes after each buffer (multiple of 64)
};

struct Lifetime {
  int first_step = 0;  // the step that writes the value
  int last_step = 0;   // the last step that reads it; steps.size() for "until the run ends"
};

struct MemoryPlan {
  static constexpr size_t kAlignment = 64;
  std::vector<int64_t> offset;      // per value id: byte offset in the arena, -1 when not in it
  std::vector<size_t> bytes;        // per value id: bytes reserved (aligned), 0 when not in it
  std::vector<Lifetime> lifetime;   // per value id, meaningful where offset >= 0
  std::vector<std::vector<int>> dying_after;  // per step: arena values whose last reader it is
  std::vector<int64_t> scratch_offset;        // per step: its kernel's scratch, -1 when none
  std::vector<size_t> scratch_bytes;          // per step
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;     // max over steps of the bytes live at that step
  size_t naive_bytes = 0;           // sum of all intermediates (no sharing)
};

// The value whose buffer `v` uses: itself, or the root of the view chain it aliases.
int alias_root(const Plan& plan, int v);

MemoryPlan plan_memory(const Plan& plan, const MemoryOptions& options);

}  // namespace fusor
