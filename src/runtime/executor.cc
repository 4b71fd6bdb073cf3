#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/openmp_wait.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor {
namespace {

constexpr std::byte kCanary{0xA5};
constexpr std::byte kPoison{0xFF};
constexpr size_t kGuardBytes = 64;

}  // namespace

Executor::Executor(const Plan& plan, const ExecutorOptions& options)
    : plan_(plan),
      options_(options),
      memory_(plan_memory(plan, {options.mem_reuse, options.mem_guard ? kGuardBytes : 0})),
      arena_store_(options.shared_arena ? options.shared_arena : std::make_shared<SharedArena>()),
      slots_(plan.types.size()) {
  if (plan.claimed_by_executor) throw Error("a plan's kernels serve one executor at a time: build another plan");
  cpu::apply_openmp_wait_variable();  // a bad FUSOR_OPENMP_WAIT fails here, whatever the plan's kernels
  // A shared arena grows now to the largest of its plans, so that serving does not grow it again.
  if (options.shared_arena) options.shared_arena->reserve(memory_.arena_bytes, arena_fill());
  plan.claimed_by_executor = true;
  const Graph& g = *plan.graph;
  input_readers_.resize(g.inputs.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const int v = g.inputs[i];
    bool viewed = false;
    for (size_t w = 0; w < plan.alias_of.size(); ++w)
      viewed = viewed || (plan.alias_of[w] >= 0 && alias_root(plan, static_cast<int>(w)) == v);
    if (plan.is_constant(v) || plan.is_shared(v) || viewed ||
        std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end())
      continue;
    for (size_t s = 0; s < plan.steps.size(); ++s)
      for (size_t k = 0; k < plan.steps[s].inputs.size(); ++k)
        if (plan.steps[s].inputs[k] == v) input_readers_[i].emplace_back(s, k);
  }
}

Executor::~Executor() { plan_.claimed_by_executor = false; }

void Executor::share_arena(std::shared_ptr<SharedArena> arena) {
  options_.shared_arena = arena;
  arena->reserve(memory_.arena_bytes, arena_fill());
  arena_store_ = std::move(arena);
  arena_ = nullptr;  // rebind at the next run
}

// The arena is allocated at the first run, so a session that moves to a shared arena before it
// runs (a server's packed plans) never holds one of its own; the slots are bound again when the
// arena grew for a larger plan since this executor's last run.
void Executor::bind_arena() {
  std::byte* bytes = arena_store_->reserve(memory_.arena_bytes, arena_fill());  // a no-op once large enough
  if (bytes == arena_ && arena_store_->generation() == arena_generation_) return;
  arena_ = bytes;
  arena_generation_ = arena_store_->generation();
  bind_slots();
}

std::byte Executor::arena_fill() const { return options_.mem_guard ? kCanary : std::byte{0}; }

// Every value's tensor, and every step's input and output tensors, as views into the arena.
void Executor::bind_slots() {
  const Plan& plan = plan_;
  for (size_t v = 0; v < slots_.size(); ++v) {
    const TensorType& t = plan.types[v];
    if (plan.is_constant(static_cast<int>(v))) {
      slots_[v] = plan.constants[v];
    } else if (plan.is_shared(static_cast<int>(v))) {
      slots_[v] = plan.shared[v];
    } else if (int root = alias_root(plan, static_cast<int>(v)); memory_.offset[static_cast<size_t>(root)] >= 0) {
      slots_[v] = Tensor::view(t.dtype, t.dims, arena_ + memory_.offset[static_cast<size_t>(root)]);
    }
  }
  step_inputs_.assign(plan.steps.size(), {});
  step_outputs_.assign(plan.steps.size(), {});
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (int v : plan.steps[s].inputs) step_inputs_[s].push_back(v >= 0 ? slots_[static_cast<size_t>(v)] : Tensor());
    for (int v : plan.steps[s].outputs) step_outputs_[s].push_back(v >= 0 ? slots_[static_cast<size_t>(v)] : Tensor());
  }
}

std::span<std::byte> Executor::scratch_of(size_t step) const {
  int64_t off = memory_.scratch_offset[step];
  if (off < 0) return {};
  return {arena_ + off, memory_.scratch_bytes[step]};
}

void Executor::bind_inputs(const std::vector<Tensor>& inputs) {
  const Graph& g = *plan_.graph;
  if (inputs.size() != g.inputs.size())
    throw Error("expected " + std::to_string(g.inputs.size()) + " inputs, got " + std::to_string(inputs.size()),
                ErrorKind::InvalidArgument);
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t id = static_cast<size_t>(g.inputs[i]);
    if (plan_.is_shared(static_cast<int>(id))) continue;  // the plan's own tensor, used in place
    const TensorType& want = plan_.types[id];
    if (inputs[i].dtype() != want.dtype || inputs[i].dims() != want.dims)
      throw Error("input '" + g.values[id].name + "' must be " + dtype_name(want.dtype) + " " +
                  dims_to_string(want.dims) + ", got " + dtype_name(inputs[i].dtype()) + " " +
                  dims_to_string(inputs[i].dims()),
                  ErrorKind::InvalidArgument);
    if (plan_.is_constant(static_cast<int>(id))) {
      if (std::memcmp(inputs[i].raw(), slots_[id].raw(), inputs[i].nbytes()) != 0)
        throw Error("input '" + g.values[id].name + "' was frozen when the session was built and cannot change",
                    ErrorKind::InvalidArgument);
      continue;
    }
    // Kernels read the caller's tensor in place when they alone read it and it has the arena's
    // alignment (a copy of the Tensor: same dims, so no allocation); else it is copied in.
    const bool in_place = !input_readers_[i].empty() &&
                          reinterpret_cast<uintptr_t>(inputs[i].raw()) % MemoryPlan::kAlignment == 0;
    for (const auto& [s, k] : input_readers_[i]) step_inputs_[s][k] = in_place ? inputs[i] : slots_[id];
    if (!in_place && inputs[i].nbytes()) std::memcpy(slots_[id].raw(), inputs[i].raw(), inputs[i].nbytes());
  }
}

// After a run, steps read the arena again: no step keeps the caller's tensor.
void Executor::release_inputs() {
  const Graph& g = *plan_.graph;
  for (size_t i = 0; i < input_readers_.size(); ++i)
    for (const auto& [s, k] : input_readers_[i]) step_inputs_[s][k] = slots_[static_cast<size_t>(g.inputs[i])];
}

std::byte* Executor::guard_of(int v) const {
  int root = alias_root(plan_, v);
  int64_t off = memory_.offset[static_cast<size_t>(root)];
  return off < 0 ? nullptr : arena_ + off + memory_.bytes[static_cast<size_t>(root)] - kGuardBytes;
}

// Guard bytes may hold a dead value's data (the arena reuses bytes), so each step's output
// guards are re-armed right before it runs and checked right after.
void Executor::arm_guards(size_t s) {
  for (int v : plan_.steps[s].outputs)
    if (std::byte* guard = v >= 0 ? guard_of(v) : nullptr) std::memset(guard, static_cast<int>(kCanary), kGuardBytes);
}

void Executor::check_guards(size_t s) const {
  const Step& step = plan_.steps[s];
  for (int v : step.outputs) {
    const std::byte* guard = v >= 0 ? guard_of(v) : nullptr;
    if (!guard) continue;
    int root = alias_root(plan_, v);
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (guard[i] != kCanary)
        throw Error("memory guard: kernel " + step.kernel->name() + " of " +
                    plan_.graph->nodes[static_cast<size_t>(step.node)].describe() + " wrote past the end of tensor '" +
                    plan_.graph->values[static_cast<size_t>(root)].name + "'");
  }
}

void Executor::poison_dead(size_t s) {
  for (int v : memory_.dying_after[s]) {
    const Tensor& t = slots_[static_cast<size_t>(v)];
    std::memset(t.raw(), static_cast<int>(kPoison), t.nbytes());
  }
}

// Observers see row-major tensors: values stored in a kernel's blocked layout are converted.
void Executor::observe(size_t s) const {
  const Step& step = plan_.steps[s];
  auto plain = [&](const std::vector<int>& ids, const std::vector<Tensor>& stored) {
    std::vector<Tensor> out = stored;
    for (size_t i = 0; i < ids.size() && !plan_.blocked_by.empty(); ++i)
      if (ids[i] >= 0 && plan_.blocked_by[static_cast<size_t>(ids[i])]) {
        out[i] = Tensor(stored[i].dtype(), stored[i].dims());
        plan_.blocked_by[static_cast<size_t>(ids[i])]->output_to_plain(stored[i], out[i]);
      }
    return out;
  };
  observer_(s, step, plain(step.inputs, step_inputs_[s]), plain(step.outputs, step_outputs_[s]));
}

bool Executor::run_kernels(const std::vector<Tensor>& inputs) {
  SharedArena::Use in_use(*arena_store_);
  bind_arena();
  bind_inputs(inputs);
  cpu::OpenmpTeamScope team(plan_.openmp_team);
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    if (abandon_ && abandon_->load(std::memory_order_relaxed)) {
      release_inputs();
      return false;
    }
    const Step& step = plan_.steps[s];
    if (options_.mem_guard) arm_guards(s);
    if (hook_) {
      auto t0 = std::chrono::steady_clock::now();
      step.kernel->run(step_inputs_[s], step_outputs_[s], scratch_of(s));
      hook_(s, step, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } else {
      step.kernel->run(step_inputs_[s], step_outputs_[s], scratch_of(s));
    }
    if (override_) override_(step, step_outputs_[s]);
    if (observer_) observe(s);
    if (options_.mem_guard) {
      check_guards(s);
      poison_dead(s);
    }
  }
  release_inputs();
  if (plan_.openmp_team) {
    cpu::openmp_wait_after_run();
    cpu::release_openmp_team_if_callers_share();
  }
  return true;
}

bool Executor::run_into(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  if (!run_kernels(inputs)) return false;
  const Graph& g = *plan_.graph;
  outputs.resize(g.outputs.size());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Tensor& src = slots_[static_cast<size_t>(g.outputs[i])];
    if (outputs[i].dtype() != src.dtype() || outputs[i].dims() != src.dims()) outputs[i] = Tensor(src.dtype(), src.dims());
    if (src.nbytes()) std::memcpy(outputs[i].raw(), src.raw(), src.nbytes());
  }
  return true;
}

bool Executor::run_in_place(const std::vector<Tensor>& inputs, std::vector<Tensor>& views) {
  if (!run_kernels(inputs)) return false;
  const Graph& g = *plan_.graph;
  views.resize(g.outputs.size());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Tensor& slot = slots_[static_cast<size_t>(g.outputs[i])];
    if (views[i].raw() != slot.raw() || views[i].dtype() != slot.dtype() || views[i].dims() != slot.dims())
      views[i] = Tensor::view(slot.dtype(), slot.dims(), slot.raw());  // only when the arena moved: no allocation per run
  }
  return true;
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  run_into(inputs, outputs);
  return outputs;
}

}  // namespace fusor
