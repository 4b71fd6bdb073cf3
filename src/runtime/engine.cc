#include "fusor/engine.h"

#include "kernels/cpu/backend.h"
#include "onnx/importer.h"
#include "plan/plan.h"
#include "runtime/executor.h"
#include "runtime/sample_inputs.h"

namespace fusor {

Session::Session(std::unique_ptr<Plan> plan, const SessionOptions& options)
    : plan_(std::move(plan)),
      executor_(std::make_unique<Executor>(*plan_, ExecutorOptions{options.mem_reuse, options.mem_guard})) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  const Graph& g = *plan_->graph;
  std::vector<Tensor> ordered;
  for (int id : g.inputs) {
    const std::string& name = g.values[static_cast<size_t>(id)].name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("missing input '" + name + "'");
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("model has no input named '" + name + "'");
  }
  std::vector<Tensor> outs = executor_->run(ordered);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < outs.size(); ++i) named[g.values[static_cast<size_t>(g.outputs[i])].name] = outs[i];
  return named;
}

size_t Session::kernels_per_inference() const { return plan_->steps.size(); }

Session::MemoryStats Session::memory() const {
  const MemoryPlan& m = executor_->memory();
  size_t weights = 0;
  for (const Tensor& c : plan_->constants) weights += c.defined() ? c.nbytes() : 0;
  return {m.arena_bytes, m.lower_bound_bytes, m.naive_bytes, weights};
}
const Plan& Session::plan() const { return *plan_; }
Executor& Session::executor() { return *executor_; }

Engine Engine::load(const std::string& path) {
  return Engine(std::make_shared<const Graph>(import_onnx_file(path)));
}

namespace {
TensorInfo info_of(const Value& v) {
  TensorInfo info;
  info.name = v.name;
  info.dtype = v.dtype;
  info.has_shape = v.shape.has_value();
  if (v.shape)
    for (const Dim& d : *v.shape) {
      info.dims.push_back(d.is_static() ? d.value : -1);
      info.symbols.push_back(d.is_static() ? "" : d.symbol);
    }
  return info;
}
}  // namespace

std::vector<TensorInfo> Engine::inputs() const {
  std::vector<TensorInfo> r;
  for (int id : graph_->inputs) r.push_back(info_of(graph_->values[static_cast<size_t>(id)]));
  return r;
}

std::vector<TensorInfo> Engine::outputs() const {
  std::vector<TensorInfo> r;
  for (int id : graph_->outputs) r.push_back(info_of(graph_->values[static_cast<size_t>(id)]));
  return r;
}

size_t Engine::node_count() const { return graph_->source_node_count; }

std::map<std::string, Dims> Engine::bind_dims(const std::map<std::string, Dims>& shapes, int64_t batch,
                                              int64_t seq) const {
  std::map<std::string, Dims> out;
  for (const auto& [name, dims] : shapes) {
    int id = graph_->find_value(name);
    if (id < 0 || std::find(graph_->inputs.begin(), graph_->inputs.end(), id) == graph_->inputs.end())
      throw Error("--shape names '" + name + "', which is not a model input");
  }
  for (const TensorInfo& in : inputs()) {
    if (auto it = shapes.find(in.name); it != shapes.end()) {
      out[in.name] = it->second;
      continue;
    }
    if (!in.has_shape) throw Error("input '" + in.name + "' has no declared shape: give it with --shape");
    Dims dims = in.dims;
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] < 0) dims[i] = i == 0 ? batch : seq;
    out[in.name] = dims;
  }
  return out;
}

Session Engine::session(const std::map<std::string, Dims>& input_dims, const SessionOptions& options) const {
  PlanOptions po;
  po.kernels = options.reference ? KernelChoice::Reference : KernelChoice::Fast;
  po.backend = &cpu::backend();
  po.frozen_inputs = options.frozen_inputs;
  po.memory_aware_order = options.reorder;
  po.fusion = options.fusion;
  po.wrap_fused_kernel = options.wrap_fused_kernel;
  return Session(std::make_unique<Plan>(build_plan(graph_, input_dims, po)), options);
}

std::map<std::string, Tensor> Engine::sample_inputs(const std::map<std::string, Dims>& input_dims,
                                                    uint64_t seed) const {
  return fusor::sample_inputs(*graph_, input_dims, seed);
}

}  // namespace fusor
