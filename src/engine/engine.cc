#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

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

namespace {

// Where dims have other names ("b", "s", "t", "p" in a dynamo export): a decoder step's
// attention_mask [batch, past + tokens], its length a dim of its own that the shapes given left
// unbound, spans the past (dim 2 of a past_key_values input) and input_ids' tokens.
void bind_decoder_mask(const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& unbound,
                       std::map<std::string, Dims>& out) {
  const TensorInfo *ids = nullptr, *past = nullptr;
  for (const TensorInfo& in : inputs) {
    if (in.name == "input_ids" && in.dims.size() == 2) ids = &in;
    if (in.name.find("past") != std::string::npos && in.dims.size() == 4 && !past) past = &in;
  }
  if (!ids || !past) return;
  for (const TensorInfo& in : unbound) {
    if (in.name != "attention_mask" || in.dims.size() != 2 || in.dims[1] >= 0 || in.symbols.size() != 2) continue;
    const std::string& total = in.symbols[1];
    if (total.empty() || total == ids->symbols.at(1) || total == past->symbols.at(2)) continue;
    out[in.name][1] = out.at(past->name)[2] + out.at(ids->name)[1];
  }
}

}  // namespace

std::map<std::string, Dims> Engine::bind_dims(const std::map<std::string, Dims>& shapes, int64_t batch,
                                              int64_t seq) const {
  const Graph& g = *impl_->graph;
  // The CLI checks its --batch and --seq; the Python API's batch=-1 reached a tensor's own check.
  // 0 binds empty dims (a decoder's first step has no past).
  if (batch < 0) throw Error("batch must not be negative, got " + std::to_string(batch), ErrorKind::InvalidArgument);
  if (seq < 0) throw Error("seq must not be negative, got " + std::to_string(seq), ErrorKind::InvalidArgument);
  for (const auto& [name, dims] : shapes) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("dims are given for '" + name + "', which is not a model input", ErrorKind::InvalidArgument);
  }
  std::map<std::string, Dims> out;
  std::map<std::string, int64_t> symbols;  // each symbol's value: from the shapes given, else the defaults
  std::map<std::string, std::string> symbol_from;  // the given input that set it
  auto note_symbols = [&](const TensorInfo& in, const Dims& dims) {
    for (size_t i = 0; i < in.symbols.size() && i < dims.size(); ++i)
      if (!in.symbols[i].empty()) symbols.emplace(in.symbols[i], dims[i]);
  };
  for (const TensorInfo& in : inputs())
    if (auto it = shapes.find(in.name); it != shapes.end()) {
      out[in.name] = it->second;
      // Two given inputs that disagree on a shared dim failed deep in the graph (a broadcast).
      for (size_t i = 0; i < in.symbols.size() && i < it->second.size(); ++i)
        if (auto s = symbols.find(in.symbols[i]); !in.symbols[i].empty() && s != symbols.end() && s->second != it->second[i])
          throw Error("inputs '" + symbol_from[in.symbols[i]] + "' and '" + in.name + "' give the model's dim '" +
                          in.symbols[i] + "' as " + std::to_string(s->second) + " and " + std::to_string(it->second[i]),
                      ErrorKind::InvalidArgument);
      note_symbols(in, it->second);
      for (const std::string& s : in.symbols)
        if (!s.empty()) symbol_from.emplace(s, in.name);
    }
  std::vector<TensorInfo> unbound;
  for (const TensorInfo& in : inputs()) {
    if (out.count(in.name)) continue;
    if (!in.has_shape)
      throw Error("input '" + in.name + "' has no declared shape, and no dims were given for it",
                  ErrorKind::InvalidArgument);
    Dims dims = in.dims;
    // A dim another input's given shape names takes its value there (`fusor run MODEL --input
    // input_ids=ids.npy` generated the mask at the default length, and failed to broadcast).
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] < 0) {
        auto s = i < in.symbols.size() && !in.symbols[i].empty() ? symbols.find(in.symbols[i]) : symbols.end();
        dims[i] = s != symbols.end() ? s->second : i == 0 ? batch : seq;
      }
    note_symbols(in, dims);
    out[in.name] = dims;
    unbound.push_back(in);
  }
  // A decoder export's attention mask spans the past and this step's tokens: a "total..." length
  // is the "past..." one plus "sequence_length" (as scripts/decoder_export.py and ONNX Runtime
  // GenAI's exports name them), where the shapes given left it symbolic.
  std::optional<int64_t> past, tokens;
  for (const auto& [name, value] : symbols) {
    if (name.rfind("past", 0) == 0) past = value;
    if (name == "sequence_length") tokens = value;
  }
  if (past)
    for (const TensorInfo& in : unbound)
      for (size_t i = 0; i < in.symbols.size(); ++i)
        if (in.dims[i] < 0 && in.symbols[i].rfind("total", 0) == 0) out[in.name][i] = *past + tokens.value_or(seq);
  bind_decoder_mask(inputs(), unbound, out);
  return out;
}

Session Engine::session(const std::map<std::string, Dims>& input_dims, const SessionOptions& options) const {
  return build_session(*this, input_dims, options, {});
}

std::map<std::string, Tensor> Engine::sample_inputs(const std::map<std::string, Dims>& input_dims,
                                                    uint64_t seed) const {
  // Inputs are written as they are made: past the machine's memory the kernel killed the process
  // (`fusor run --seq 2147483647`: three 16 GB inputs on a 23 GB machine).
  long double bytes = 0;
  for (const TensorInfo& in : inputs())
    if (auto it = input_dims.find(in.name); it != input_dims.end())  // numel_of: a count past int64 is its own error
      bytes += static_cast<long double>(numel_of(it->second)) * static_cast<long double>(dtype_size(in.dtype));
  const long double memory = static_cast<long double>(physical_memory_bytes());
  if (memory > 0 && bytes > memory) {
    char text[128];
    std::snprintf(text, sizeof text, "%.3g GB, more than this machine's %.3g GB", static_cast<double>(bytes / 1e9),
                  static_cast<double>(memory / 1e9));
    throw Error(std::string("out of memory: the inputs at these dims take ") + text, ErrorKind::InvalidArgument);
  }
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

// Inputs this small, of integer or boolean type, are the first frozen when a shape or branch
// needs input values: flags and shape tensors, not data.
constexpr int64_t kSmallInputElements = 16;

bool is_integer_or_bool(DType t) {
  switch (t) {
    case DType::Bool: case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16:
    case DType::Int32: case DType::UInt32: case DType::Int64: case DType::UInt64:
      return true;
    default:
      return false;
  }
}

Session build_session(const Engine& engine, const std::map<std::string, Dims>& input_dims,
                      const SessionOptions& options, const InternalSessionOptions& internal) {
  const PlanOptions po = plan_options(options, internal);
  const std::shared_ptr<const Graph>& graph = EngineInternals::graph(engine);
  try {
    auto plan = std::make_unique<Plan>(build_plan(graph, input_dims, po));
    PlanOnReference nan_faithful;
    if (po.kernels == KernelChoice::Fast && po.shared_inputs.empty())
      nan_faithful = [graph, input_dims, po] {
        PlanOptions reference = po;
        reference.kernels = KernelChoice::Reference;
        return std::make_unique<Plan>(build_plan(graph, input_dims, reference));
      };
    return EngineInternals::session(std::move(plan), options, std::move(nan_faithful));
  } catch (const DataDependentShape& e) {
    // Some shape or branch depends on input values: plan per run with inputs frozen. First only
    // the small integer and boolean ones (a merged decoder's use_cache_branch, a shape tensor):
    // when that is enough the plan keeps its fast kernels, and runs reuse it while those values
    // repeat. Otherwise (NonZero, Unique, NonMaxSuppression on run-time data) every input: the
    // whole graph then folds at plan time in reference kernels, so each run with new values
    // costs a plan and runs no fast kernel; see docs/architecture.md.
    PlanForInputs plan_for = [graph, input_dims, po](const std::map<std::string, Tensor>& inputs) {
      auto freeze = [&](auto&& which) {
        PlanForValues made;
        PlanOptions frozen = po;
        for (const auto& [name, value] : inputs)
          if (which(value) && frozen.frozen_inputs.try_emplace(name, value).second)  // options.frozen_inputs stay
            made.frozen.push_back(name);
        made.plan = std::make_unique<Plan>(build_plan(graph, input_dims, frozen));
        return made;
      };
      try {
        return freeze([](const Tensor& t) { return t.numel() <= kSmallInputElements && is_integer_or_bool(t.dtype()); });
      } catch (const DataDependentShape&) {
        return freeze([](const Tensor&) { return true; });
      }
    };
    return EngineInternals::session_planned_per_run(std::move(plan_for), e.what(), graph, input_dims, options);
  }
}

}  // namespace fusor
