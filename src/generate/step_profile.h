// Kernel times of a DecoderBatch's steps (fusor/decoder.h: DecoderBatch::set_profiling): each
// plan keeps a number per step of its own, filled by the executor's step hook without a lookup
// or an allocation, and the profile groups them by kernel name across plans when asked.
#pragma once
#include <cstdint>
#include <vector>

#include "fusor/decoder.h"
#include "plan/plan.h"

namespace fusor {

enum class StepKind { Decode = 0, Prompt = 1 };

// One plan's times for one kind of step. A run's kernel times wait in `pending` until it
// finishes: a run abandoned or failed midway adds nothing, so every kernel of a plan has run as
// many times as the plan (`runs`).
struct StepTimes {
  std::vector<double> seconds;  // per plan step (kernel), summed over finished runs
  std::vector<double> pending;  // per plan step, the run going on
  int64_t runs = 0, tokens = 0;
  double wall_seconds = 0;

  void finish_run(int64_t run_tokens, double run_seconds) {
    for (size_t i = 0; i < seconds.size(); ++i) seconds[i] += pending[i];
    ++runs;
    tokens += run_tokens;
    wall_seconds += run_seconds;
  }
};

// Sized for `plan`'s steps, all zero.
StepTimes step_times_for(const Plan& plan);

// Adds `times` (of `plan`'s steps) into `out`, a kernel's calls and seconds summed by name and op.
void add_to_profile(const Plan& plan, const StepTimes& times, StepKindProfile& out);
// Its kernels most time first, once every plan is added.
void sort_by_time(StepKindProfile& profile);

}  // namespace fusor
