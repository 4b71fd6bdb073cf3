#include <algorithm>

#include "engine/internals.h"

namespace fusor {

struct Session::Impl {
  Impl(std::unique_ptr<Plan> p, const SessionOptions& options)
      : plan(std::move(p)), executor(*plan, ExecutorOptions{options.mem_reuse, options.mem_guard}) {}

  std::unique_ptr<Plan> plan;  // the executor refers to it: declared first, destroyed last
  Executor executor;
  Observer observer;
  std::vector<std::string> kernel_names;  // per step, for StepEvent (names are built strings)
  double step_seconds = 0;                // the step hook's time, read by the step observer
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  const Graph& g = *impl_->plan->graph;
  std::vector<Tensor> ordered;
  for (int id : g.inputs) {
    const std::string& name = g.values[static_cast<size_t>(id)].name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("missing input '" + name + "'", ErrorKind::InvalidArgument);
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("model has no input named '" + name + "'", ErrorKind::InvalidArgument);
  }
  std::vector<Tensor> outs = impl_->executor.run(ordered);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named[g.values[static_cast<size_t>(g.outputs[i])].name] = outs[i];
  return named;
}

size_t Session::kernels_per_inference() const { return impl_->plan->steps.size(); }

Session::MemoryStats Session::memory() const {
  const MemoryPlan& m = impl_->executor.memory();
  size_t weights = 0;
  for (const Tensor& c : impl_->plan->constants) weights += c.defined() ? c.nbytes() : 0;
  return {m.arena_bytes, m.lower_bound_bytes, m.naive_bytes, weights};
}

std::vector<FusionItemInfo> Session::fusion_items() const {
  std::vector<FusionItemInfo> items;
  for (const FusionItem& item : impl_->plan->fusion.items) items.push_back({item.name, item.kind, item.pass});
  return items;
}

// The executor reports a step's time (hook) and then its tensors (observer); the event joins them.
void Session::set_observer(Observer observer) {
  Impl& s = *impl_;
  s.observer = std::move(observer);
  if (!s.observer) {
    s.executor.set_step_hook(nullptr);
    s.executor.set_step_observer(nullptr);
    return;
  }
  if (s.kernel_names.empty())
    for (const Step& step : s.plan->steps) s.kernel_names.push_back(step.kernel->name());
  s.executor.set_step_hook([&s](size_t, const Step&, double seconds) { s.step_seconds = seconds; });
  s.executor.set_step_observer(
      [&s](size_t index, const Step& step, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
        const Node& node = s.plan->graph->nodes[static_cast<size_t>(step.node)];
        s.observer({index, node.name, node.op_type, s.kernel_names[index], inputs, outputs, s.step_seconds});
      });
}

const Plan& EngineInternals::plan(const Session& session) { return *session.impl_->plan; }
Executor& EngineInternals::executor(Session& session) { return session.impl_->executor; }
Session EngineInternals::session(std::unique_ptr<Plan> plan, const SessionOptions& options) {
  return Session(std::make_unique<Session::Impl>(std::move(plan), options));
}

}  // namespace fusor
