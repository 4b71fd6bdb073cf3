#include <algorithm>

#include "engine/internals.h"
#include "engine/sample_inputs.h"
#include "ir/data_dependent.h"
#include "kernels/cpu/backend.h"
#include "onnx/importer.h"

namespace fusor {

struct Engine::Impl {
  std::shared_ptr<const Graph> graph;
};

Engine::Engine(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Engine Engine::load(const std::string& path) {
  return Engine(std::make_shared<const Impl>(Impl{std::make_shared<const Graph>(import_onnx_file(path))}));
}

Engine Engine::load_bytes(const std::string& bytes, const std::string& base_dir) {
  return Engine(std::make_shared<const Impl>(Impl{std::make_shared<const Graph>(import_onnx_bytes(bytes, base_dir))}));
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

std::vector<TensorInfo> infos_of(const Graph& g, const std::vector<int>& ids) {
  std::vector<TensorInfo> r;
  for (int id : ids) r.push_back(info_of(g.values[static_cast<size_t>(id)]));
  return r;
}

}  // namespace

std::vector<TensorInfo> Engine::inputs() const { return infos_of(*impl_->graph, impl_->graph->inputs); }
std::vector<TensorInfo> Engine::outputs() const { return infos_of(*impl_->graph, impl_->graph->outputs); }
size_t Engine::node_count() const { return impl_->graph->source_node_count; }

std::map<std::string, Dims> Engine::bind_dims(const std::map<std::string, Dims>& shapes, int64_t batch,
                                              int64_t seq) const {
  const Graph& g = *impl_->graph;
  for (const auto& [name, dims] : shapes) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("dims are given for '" + name + "', which is not a model input", ErrorKind::InvalidArgument);
  }
  // A decoder export's attention mask spans the past and this step's tokens: its symbol
  // (Optimum's "total_sequence_length") is their sum when a "past..." symbol is bound too.
  bool has_past = false;
  for (const TensorInfo& in : inputs())
    for (const std::string& s : in.symbols) has_past = has_past || s.rfind("past", 0) == 0;
  std::map<std::string, Dims> out;
  for (const TensorInfo& in : inputs()) {
    if (auto it = shapes.find(in.name); it != shapes.end()) {
      out[in.name] = it->second;
      continue;
    }
    if (!in.has_shape)
      throw Error("input '" + in.name + "' has no declared shape, and no dims were given for it",
                  ErrorKind::InvalidArgument);
    Dims dims = in.dims;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] >= 0) continue;
      const bool total = has_past && i < in.symbols.size() && in.symbols[i].rfind("total", 0) == 0;
      dims[i] = i == 0 ? batch : total ? 2 * seq : seq;
    }
    out[in.name] = dims;
  }
  return out;
}

Session Engine::session(const std::map<std::string, Dims>& input_dims, const SessionOptions& options) const {
  return build_session(*this, input_dims, options, {});
}

std::map<std::string, Tensor> Engine::sample_inputs(const std::map<std::string, Dims>& input_dims,
                                                    uint64_t seed) const {
  return fusor::sample_inputs(*impl_->graph, input_dims, seed);
}

const std::shared_ptr<const Graph>& EngineInternals::graph(const Engine& engine) { return engine.impl_->graph; }

PlanOptions plan_options(const SessionOptions& options, const InternalSessionOptions& internal) {
  PlanOptions po;
  po.kernels = options.reference ? KernelChoice::Reference : KernelChoice::Fast;
  po.backend = &cpu::backend();
  po.frozen_inputs = options.frozen_inputs;
  po.memory_aware_order = options.reorder;
  po.fusion = options.fusion;
  po.wrap_fused_kernel = internal.wrap_fused_kernel;
  return po;
}

Session build_session(const Engine& engine, const std::map<std::string, Dims>& input_dims,
                      const SessionOptions& options, const InternalSessionOptions& internal) {
  const PlanOptions po = plan_options(options, internal);
  const std::shared_ptr<const Graph>& graph = EngineInternals::graph(engine);
  try {
    return EngineInternals::session(std::make_unique<Plan>(build_plan(graph, input_dims, po)), options);
  } catch (const DataDependentShape& e) {
    // Some shape depends on input values (NonZero, Unique, NonMaxSuppression on run-time data,
    // a computed Reshape target): plan per run with every input frozen. The whole graph then
    // folds at plan time in reference kernels, so each run with new values costs a plan
    // (binding, fusion passes, memory plan) and runs no fast kernel; see docs/architecture.md.
    PlanForInputs plan_for = [graph, input_dims, po](const std::map<std::string, Tensor>& inputs) {
      PlanOptions frozen = po;
      for (const auto& [name, value] : inputs) frozen.frozen_inputs.try_emplace(name, value);  // options.frozen_inputs stay
      return std::make_unique<Plan>(build_plan(graph, input_dims, frozen));
    };
    return EngineInternals::session_planned_per_run(std::move(plan_for), e.what(), graph, input_dims, options);
  }
}

}  // namespace fusor
