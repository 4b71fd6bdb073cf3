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

// One plan's times for one kind of step.
struct StepTimes {
  std::vector<double> seconds;  // per plan step (kernel), summed over runs
  std::vector<int64_t> calls;
  int64_t runs = 0, tokens = 0;
  double wall_seconds = 0;

  void add_kernel(size_t step, double s) {
    seconds[step] += s;
    ++calls[step];
  }
};

// Sized for `plan`'s steps, all zero.
StepTimes step_times_for(const Plan& plan);

// Adds `times` (of `plan`'s steps) into `out`, a kernel's calls and seconds summed by name and
// op; kernels stay sorted most time first.
void add_to_profile(const Plan& plan, const StepTimes& times, StepKindProfile& out);

}  // namespace fusor
