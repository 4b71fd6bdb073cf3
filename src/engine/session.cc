#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "engine/internals.h"

namespace fusor {

// A session holds one plan and the executor that runs it. A session planned per run (its model
// has shapes that depend on input values, see build_session) starts without either: each run()
// with new input values plans again with every input frozen and replaces both, so plan_of,
// executor_of, kernels_per_inference(), memory() and fusion_items() describe the last run.
struct Session::Impl {
  // Per-run planning: how to plan for given values, and the values the current plan was made for.
  struct PerRun {
    PlanForInputs plan_for;
    std::string reason;  // the first shape that needed input values
    std::shared_ptr<const Graph> model;
    std::map<std::string, Dims> dims;
    std::map<std::string, Tensor> planned_for;  // the frozen inputs' values, copies: callers may reuse their buffers
  };

  Impl(std::unique_ptr<Plan> p, const SessionOptions& options, PlanOnReference faithful)
      : executor_options{options.mem_reuse, options.mem_guard, {}}, nan_faithful(std::move(faithful)) {
    install(std::move(p));
  }
  Impl(PerRun per_run_planning, const SessionOptions& options)
      : executor_options{options.mem_reuse, options.mem_guard, {}}, per_run(std::move(per_run_planning)) {}

  void install(std::unique_ptr<Plan> p) {
    executor.reset();  // it refers to the old plan
    plan = std::move(p);
    executor = std::make_unique<Executor>(*plan, executor_options);
    drops_nan = std::any_of(plan->steps.begin(), plan->steps.end(), [](const Step& s) { return s.kernel->drops_nan(); });
    kernel_names.clear();
    install_observer();
  }
  // Runs in `arena` from now on (a per-run session's next plan takes it too).
  void use_arena(std::shared_ptr<SharedArena> arena) {
    executor_options.shared_arena = arena;
    if (executor) executor->share_arena(std::move(arena));
  }
  void install_observer();
  void plan_for_values(const std::map<std::string, Tensor>& inputs);
  [[noreturn]] void no_plan_yet() const {
    throw Error(per_run->reason + "; the session is planned per run and has no plan before its first run()");
  }

  ExecutorOptions executor_options;
  std::optional<PerRun> per_run;
  std::unique_ptr<Plan> plan;          // the executor refers to it: destroyed after it
  std::unique_ptr<Executor> executor;  // null only in a per-run session before its first run
  Observer observer;
  // Inputs holding NaN or Inf run on reference kernels where the plan has a kernel that would
  // drop a NaN (Kernel::drops_nan): a NaN pixel through resnet18's fused Conv+ReLU gave the
  // logits of a 0 pixel, silently, where ONNX Runtime and the reference give NaN. The reference
  // plan is built on the first such run; other runs are untouched (the check reads the inputs).
  bool drops_nan = false;
  PlanOnReference nan_faithful;              // null: no fallback (planned per run, shared inputs)
  std::unique_ptr<Plan> nan_plan;            // nan_executor refers to it: destroyed after it
  std::unique_ptr<Executor> nan_executor;
  Executor& executor_for(const std::vector<Tensor>& inputs);
  std::vector<std::string> kernel_names;  // per step, for StepEvent (names are built strings)
  double step_seconds = 0;                // the step hook's time, read by the step observer
};

namespace {

// NaN, or an infinity: one becomes NaN inside the model as soon as it meets its opposite
// (resnet18: an Inf pixel gives ONNX Runtime 1000 NaN logits, the fused plan none).
bool holds_non_finite(const Tensor& t) {
  auto any = [](const auto* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i])) return true;
    return false;
  };
  if (t.dtype() == DType::Float32) return any(t.data<float>(), t.numel());
  if (t.dtype() == DType::Float64) return any(t.data<double>(), t.numel());
  return false;
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

// Plans again unless these are the values of the current plan (one plan cached: the last).
void Session::Impl::plan_for_values(const std::map<std::string, Tensor>& inputs) {
  PerRun& p = *per_run;
  for (const auto& [name, dims] : p.dims) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("missing input '" + name + "'", ErrorKind::InvalidArgument);
    const Value& v = p.model->values[static_cast<size_t>(p.model->find_value(name))];
    if (it->second.dtype() != v.dtype || it->second.dims() != dims)
      throw Error("input '" + name + "' must be " + dtype_name(v.dtype) + " " + dims_to_string(dims) + ", got " +
                      dtype_name(it->second.dtype()) + " " + dims_to_string(it->second.dims()),
                  ErrorKind::InvalidArgument);
  }
  for (const auto& [name, t] : inputs)
    if (!p.dims.count(name)) throw Error("model has no input named '" + name + "'", ErrorKind::InvalidArgument);
  if (plan && std::all_of(p.planned_for.begin(), p.planned_for.end(),
                          [&](const auto& frozen) { return same_values(inputs.at(frozen.first), frozen.second); }))
    return;
  PlanForValues made = p.plan_for(inputs);
  std::map<std::string, Tensor> values;
  for (const std::string& name : made.frozen) values[name] = inputs.at(name).clone();
  install(std::move(made.plan));
  p.planned_for = std::move(values);
}

Executor& Session::Impl::executor_for(const std::vector<Tensor>& inputs) {
  if (!drops_nan || !nan_faithful || std::none_of(inputs.begin(), inputs.end(), holds_non_finite)) return *executor;
  if (!nan_executor) {
    nan_plan = nan_faithful();
    ExecutorOptions own = executor_options;
    own.shared_arena = nullptr;  // an arena of its own: the shared one is sized for the fast plans
    nan_executor = std::make_unique<Executor>(*nan_plan, own);
  }
  return *nan_executor;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> named;
  run_into(inputs, named);
  return named;
}

void Session::run_into(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs) {
  if (impl_->per_run) impl_->plan_for_values(inputs);
  const Graph& g = *impl_->plan->graph;
  std::vector<Tensor> ordered;
  for (int id : g.inputs) {
    const std::string& name = g.values[static_cast<size_t>(id)].name;
    if (impl_->plan->is_shared(id)) {  // used in place: never fed
      if (inputs.count(name))
        throw Error("input '" + name + "' is shared with the session and is not fed per run", ErrorKind::InvalidArgument);
      ordered.emplace_back();
      continue;
    }
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("missing input '" + name + "'", ErrorKind::InvalidArgument);
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("model has no input named '" + name + "'", ErrorKind::InvalidArgument);
  }
  std::vector<Tensor> outs;
  outs.reserve(g.outputs.size());
  for (int id : g.outputs) {
    auto it = outputs.find(g.values[static_cast<size_t>(id)].name);
    outs.push_back(it == outputs.end() ? Tensor() : it->second);
  }
  impl_->executor_for(ordered).run_into(ordered, outs);  // writes into the tensors whose dtype and dims match
  for (size_t i = 0; i < outs.size(); ++i) outputs[g.values[static_cast<size_t>(g.outputs[i])].name] = outs[i];
}

size_t Session::kernels_per_inference() const { return impl_->plan ? impl_->plan->steps.size() : 0; }

Session::MemoryStats Session::memory() const {
  if (!impl_->executor) return {0, 0, 0, 0};
  const MemoryPlan& m = impl_->executor->memory();
  size_t weights = 0;
  for (const Tensor& c : impl_->plan->constants) weights += c.defined() ? c.nbytes() : 0;
  return {m.arena_bytes, m.lower_bound_bytes, m.naive_bytes, weights};
}

std::vector<FusionItemInfo> Session::fusion_items() const {
  std::vector<FusionItemInfo> items;
  if (!impl_->plan) return items;
  for (const FusionItem& item : impl_->plan->fusion.items) items.push_back({item.name, item.kind, item.pass});
  return items;
}

void Session::set_observer(Observer observer) {
  impl_->observer = std::move(observer);
  impl_->install_observer();
}

// The executor reports a step's time (hook) and then its tensors (observer); the event joins them.
void Session::Impl::install_observer() {
  if (!executor) return;  // a per-run session installs it once it has planned
  if (!observer) {
    executor->set_step_hook(nullptr);
    executor->set_step_observer(nullptr);
    return;
  }
  if (kernel_names.empty())
    for (const Step& step : plan->steps) kernel_names.push_back(step.kernel->name());
  executor->set_step_hook([this](size_t, const Step&, double seconds) { step_seconds = seconds; });
  executor->set_step_observer(
      [this](size_t index, const Step& step, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
        const Node& node = plan->graph->nodes[static_cast<size_t>(step.node)];
        observer({index, node.name, node.op_type, kernel_names[index], inputs, outputs, step_seconds});
      });
}

const Plan& EngineInternals::plan(const Session& session) {
  if (!session.impl_->plan) session.impl_->no_plan_yet();
  return *session.impl_->plan;
}
void EngineInternals::share_arena(Session& session, std::shared_ptr<SharedArena> arena) {
  session.impl_->use_arena(std::move(arena));
}

Executor& EngineInternals::executor(Session& session) {
  if (!session.impl_->executor) session.impl_->no_plan_yet();
  return *session.impl_->executor;
}
Session EngineInternals::session(std::unique_ptr<Plan> plan, const SessionOptions& options,
                                 PlanOnReference nan_faithful) {
  return Session(std::make_unique<Session::Impl>(std::move(plan), options, std::move(nan_faithful)));
}
Session EngineInternals::session_planned_per_run(PlanForInputs plan_for, std::string reason,
                                                 std::shared_ptr<const Graph> model,
                                                 std::map<std::string, Dims> dims, const SessionOptions& options) {
  Session::Impl::PerRun per_run{std::move(plan_for), std::move(reason), std::move(model), std::move(dims), {}};
  return Session(std::make_unique<Session::Impl>(std::move(per_run), options));
}
const std::string& EngineInternals::planned_per_run(const Session& session) {
  static const std::string none;
  return session.impl_->per_run ? session.impl_->per_run->reason : none;
}
void EngineInternals::prepare(Session& session, const std::map<std::string, Tensor>& inputs) {
  if (session.impl_->per_run) session.impl_->plan_for_values(inputs);
}

}  // namespace fusor
