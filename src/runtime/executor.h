// Runs a Plan. One Executor is one execution context with its own arena (or one it shares with
// other executors of its thread, which run one at a time: shared_arena.h): intermediate values
// live at offsets chosen by the memory planner, inputs are copied in (or, when only kernels
// read them and they are 64-byte aligned, read in place), outputs are copied out, so no two
// executors (or requests) ever share bytes they write. Every step's input and output tensors are
// built once, so a steady-state run makes no heap allocation beyond the outputs it returns
// (none at all with run_into). Executors are not thread-safe: make one per concurrent stream.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "plan/memory_plan.h"
#include "plan/plan.h"
#include "runtime/shared_arena.h"

namespace fusor {

struct ExecutorOptions {
  bool mem_reuse = true;  // share arena bytes between values whose lifetimes do not overlap
  // Guards: canary bytes after every buffer, checked after each kernel, and values poisoned
  // (0xFF bytes: NaN for floats) once their last reader has run. A violation throws an Error
  // that names the kernel and the tensor.
  bool mem_guard = false;
  // Run in this arena, shared with other executors of the same thread (shared_arena.h), instead
  // of one of its own (allocated at the first run).
  std::shared_ptr<SharedArena> shared_arena;
};

// Called after each step (profiler). `index` is the step's position in the plan.
using StepHook = std::function<void(size_t index, const Step& step, double seconds)>;
// Called after each step with its input and output tensors, which stay valid only during the
// call (precision gate: it copies the boundary tensors of fusion items without changing the plan).
using StepObserver =
    std::function<void(size_t index, const Step& step, std::span<const Tensor> inputs, std::span<const Tensor> outputs)>;

// Called after each step, before any later step reads its outputs, with the tensors as stored
// (a value kept in a kernel's blocked layout is not row-major here): it may overwrite them. The
// precision gate replays the native plan of a quantized model with the fused run's quantization
// decisions (check/gate.cc).
using StepOverride = std::function<void(const Step& step, std::span<Tensor> outputs)>;

class Executor {
 public:
  explicit Executor(const Plan& plan, const ExecutorOptions& options = {});
  ~Executor();

  // `inputs` follow graph->inputs order and must match the plan's bound types. Returns graph
  // outputs in graph->outputs order, as tensors the caller owns.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // Same, writing into caller-owned `outputs` (allocated with the planned types when empty).
  // Returns false when the abandon flag was set: the run stopped between two kernels and
  // `outputs` are untouched.
  bool run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
  // run_into without the copy out: `views` are the outputs where the plan left them, valid until
  // the next run of this executor or of any executor sharing its arena. For a caller that reads a
  // few rows of a large output at once (a decoder step's logits).
  bool run_in_place(const std::vector<Tensor>& inputs, std::vector<Tensor>& views);
  // A flag that another thread may set to stop the runs that follow between two kernels (a
  // served decoder's step that a better class's request should not wait for); null: none.
  void set_abandon_flag(const std::atomic<bool>* flag) { abandon_ = flag; }

  void set_step_hook(StepHook hook) { hook_ = std::move(hook); }
  void set_step_observer(StepObserver observer) { observer_ = std::move(observer); }
  void set_step_override(StepOverride override_outputs) { override_ = std::move(override_outputs); }
  // Runs in `arena` from the next run on, shared with other executors of this thread; the bytes
  // of its own arena, if it ran before, are freed.
  void share_arena(std::shared_ptr<SharedArena> arena);
  const Plan& plan() const { return plan_; }
  const MemoryPlan& memory() const { return memory_; }

 private:
  bool run_kernels(const std::vector<Tensor>& inputs);  // false: abandoned
  void bind_arena();
  void bind_slots();
  std::byte arena_fill() const;
  void bind_inputs(const std::vector<Tensor>& inputs);
  void release_inputs();
  std::byte* guard_of(int value) const;
  std::span<std::byte> scratch_of(size_t step) const;
  void arm_guards(size_t step);
  void check_guards(size_t step) const;
  void poison_dead(size_t step);
  void observe(size_t step) const;

  const Plan& plan_;
  ExecutorOptions options_;
  MemoryPlan memory_;
  // The shared arena, or one of its own that no other executor sees: allocated at the first run.
  std::shared_ptr<SharedArena> arena_store_;
  std::byte* arena_ = nullptr;     // arena_store_'s bytes that slots_ point into; null before the first run
  uint64_t arena_generation_ = 0;  // arena_store_'s generation then
  std::vector<Tensor> slots_;                       // per value id
  std::vector<std::vector<Tensor>> step_inputs_;    // per step, built with the arena (bind_slots)
  std::vector<std::vector<Tensor>> step_outputs_;   // per step, likewise
  // Per graph input: the (step, input position) pairs that read it, when only kernels do (not a
  // graph output, not seen through a view), so that they may read the caller's tensor in place
  // of a copy (YOLO's 2.4 MB batch-8 image); empty when it is always copied.
  std::vector<std::vector<std::pair<size_t, size_t>>> input_readers_;
  StepHook hook_;
  StepObserver observer_;
  StepOverride override_;
  const std::atomic<bool>* abandon_ = nullptr;
};

}  // namespace fusor
