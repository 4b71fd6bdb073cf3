#include "generate/step_profile.h"

#include <algorithm>

namespace fusor {

StepTimes step_times_for(const Plan& plan) {
  StepTimes t;
  t.seconds.assign(plan.steps.size(), 0.0);
  t.pending.assign(plan.steps.size(), 0.0);
  return t;
}

void add_to_profile(const Plan& plan, const StepTimes& times, StepKindProfile& out) {
  if (times.runs == 0) return;
  out.steps += times.runs;
  out.tokens += times.tokens;
  out.seconds += times.wall_seconds;
  for (size_t i = 0; i < plan.steps.size() && i < times.seconds.size(); ++i) {
    const Step& step = plan.steps[i];
    const std::string name = step.kernel->name();
    const std::string& op = plan.graph->nodes[static_cast<size_t>(step.node)].op_type;
    auto it = std::find_if(out.kernels.begin(), out.kernels.end(),
                           [&](const KernelTime& k) { return k.kernel == name && k.op == op; });
    if (it == out.kernels.end()) it = out.kernels.insert(out.kernels.end(), KernelTime{name, op, 0, 0.0});
    it->calls += times.runs;
    it->seconds += times.seconds[i];
  }
}

void sort_by_time(StepKindProfile& profile) {
  std::stable_sort(profile.kernels.begin(), profile.kernels.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.seconds > b.seconds; });
}

}  // namespace fusor
