// Runs a Plan. One Executor is one execution context: it owns the buffers for every
// intermediate value, allocated once, so steady-state runs allocate only their outputs.
// Executors are not shared between threads; make one per concurrent stream.
#pragma once
#include <functional>
#include <vector>

#include "plan/plan.h"

namespace fusor {

// Called after each step (profiler, guards). `index` is the step's position in the plan.
using StepHook = std::function<void(size_t index, const Step& step, double seconds)>;

class Executor {
 public:
  explicit Executor(const Plan& plan);

  // `inputs` follow graph->inputs order and must match the plan's bound types.
  // Returns graph outputs in graph->outputs order, as tensors the caller owns.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  void set_step_hook(StepHook hook) { hook_ = std::move(hook); }
  const Plan& plan() const { return plan_; }

 private:
  const Plan& plan_;
  std::vector<Tensor> slots_;  // per value id
  StepHook hook_;
};

}  // namespace fusor
