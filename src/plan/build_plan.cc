#include <algorithm>

#include "ir/bind.h"
#include "ir/graph_edit.h"
#include "kernels/ref/reference.h"
#include "plan/inline_branches.h"
#include "plan/layouts.h"
#include "plan/plan.h"
#include "passes/pack_tokens.h"
#include "passes/pipeline.h"
#include "passes/storage_types.h"
#include "plan/schedule.h"

namespace fusor {
namespace {

// Ops whose first output is the first input's bytes under another shape, when the dtype stays
// (the caller checks it): a Cast to the type it already has is a copy (exports are full of
// them, such as the float-to-float Cast that names a decoder's logits).
bool is_view_op(const Node& n) {
  switch (n.op) {
    case Op::Reshape: case Op::Flatten: case Op::Squeeze: case Op::Unsqueeze: case Op::Identity: case Op::Cast:
      return true;
    case Op::Dropout:  // inference: identity, unless the mask output is wanted
      return n.outputs.size() < 2 || n.outputs[1] < 0;
    default:
      return false;
  }
}

// Fused nodes the backend found no kernel for: name, and why (for the fusion report).
using DeclinedFusions = std::vector<std::pair<std::string, std::string>>;

// The kernel for one step: the backend's in a fast plan (wrapped, for a fused node, by
// options.wrap_fused_kernel), else its reference kernel. A fused node the backend declines is
// added to `declined`.
std::unique_ptr<Kernel> choose_kernel(const KernelRequest& request, const PlanOptions& options,
                                      DeclinedFusions& declined) {
  const Node& n = request.node;
  if (options.kernels == KernelChoice::Reference) return make_reference_kernel(n);
  const Backend& backend = *options.backend;
  KernelSelection chosen = backend.select(request);
  if (!chosen) {
    if (n.op == Op::Fused)
      declined.emplace_back(n.name, "no fast " + n.op_type + " kernel" +
                                        (chosen.reason.empty() ? " for these shapes" : ": " + chosen.reason));
    return backend.reference_kernel(n);
  }
  if (n.op == Op::Fused && options.wrap_fused_kernel)
    return options.wrap_fused_kernel(request, std::move(chosen.kernel), backend);
  return std::move(chosen.kernel);
}

// One plan over `graph` as it is: bind, fold, choose views and kernels.
Plan build_steps(std::shared_ptr<const Graph> graph, std::span<const TensorType> in_types,
                 std::span<const Tensor> frozen, const PlanOptions& options, DeclinedFusions& declined) {
  const Graph& g = *graph;
  Plan plan;
  plan.graph = graph;
  if (options.kernels == KernelChoice::Fast) plan.backend = options.backend;
  Binding b = bind_graph(g, in_types, frozen, ref::evaluate);
  std::vector<bool> folded;
  for (const Node& n : g.nodes) folded.push_back(b.folded(n));
  plan.types = std::move(b.types);
  plan.constants = std::move(b.constants);
  plan.alias_of.assign(g.values.size(), -1);

  const size_t memory = physical_memory_bytes();
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    if (folded[ni]) continue;
    std::vector<TensorType> in_types_n;
    std::vector<const Tensor*> in_consts;
    for (int v : n.inputs) {
      in_types_n.push_back(v >= 0 ? plan.types[static_cast<size_t>(v)] : TensorType{});
      in_consts.push_back(v >= 0 && plan.is_constant(v) ? &plan.constants[static_cast<size_t>(v)] : nullptr);
    }
    if (options.kernels == KernelChoice::Fast && options.views && is_view_op(n) && n.outputs[0] >= 0 &&
        plan.types[static_cast<size_t>(n.outputs[0])].dtype == in_types_n[0].dtype) {
      plan.alias_of[static_cast<size_t>(n.outputs[0])] = n.inputs[0];
      continue;
    }

    // Before its kernel is made: some kernels build tables per output element at plan time
    // (Resize's taps took 16 GB for an output of 768 GB that would never be allocated).
    for (int v : n.outputs) {
      if (v < 0 || memory == 0) continue;
      const TensorType& t = plan.types[static_cast<size_t>(v)];
      if (nbytes_of(t.dims, t.dtype) > memory)
        throw Error("out of memory: " + n.describe() + " computes '" + g.values[static_cast<size_t>(v)].name +
                    "' of shape " + dims_to_string(t.dims) + ", more than this machine's memory");
    }
    Step step;
    step.node = static_cast<int>(ni);
    step.inputs = n.inputs;
    step.outputs = n.outputs;
    std::vector<TensorType> step_out;
    for (int v : n.outputs) step_out.push_back(v >= 0 ? plan.types[static_cast<size_t>(v)] : TensorType{});
    step.kernel = choose_kernel(KernelRequest{n, in_types_n, in_consts, step_out}, options, declined);
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

// The fusion switches a plan runs with. A packed plan needs its attention fused (the packed
// attention kernel, or in a reference plan its body with the sequence mask), so a reference
// packed plan fuses attention and nothing else.
std::optional<FusionConfig> fusion_to_run(const PlanOptions& options) {
  if (options.packed_tokens) {
    FusionConfig attention_only = options.kernels == KernelChoice::Fast && options.fusion ? *options.fusion : FusionConfig{};
    if (options.kernels == KernelChoice::Reference) {
#define FUSOR_SWITCH_OFF(member, label, passes, description) attention_only.member = false;
      FUSOR_FUSION_SWITCHES(FUSOR_SWITCH_OFF)
#undef FUSOR_SWITCH_OFF
      attention_only.fuse_attention = true;
    }
    if (!options.fusion || !attention_only.fuse_attention)
      throw Error("cannot pack tokens: packing needs the attention fusion (fusion.fuse_attention)",
                  ErrorKind::UnsupportedOp);
    return attention_only;
  }
  if (options.fusion && options.kernels == KernelChoice::Fast) return options.fusion;
  return std::nullopt;
}

// The steps of a plan of `tokens` tokens whose output 0 has a row per token.
std::vector<Kernel*> token_row_kernels(const Plan& plan, int64_t tokens) {
  std::vector<Kernel*> out;
  for (const Step& step : plan.steps) {
    if (step.outputs.empty() || step.outputs[0] < 0) continue;
    const Dims& d = plan.types[static_cast<size_t>(step.outputs[0])].dims;
    if (!d.empty() && numel_of(Dims(d.begin(), d.end() - 1)) == tokens) out.push_back(step.kernel.get());
  }
  return out;
}

}  // namespace

void bind_inputs(const Graph& g, const std::map<std::string, Dims>& input_dims,
                 const std::map<std::string, Tensor>& frozen_inputs, std::vector<TensorType>& types,
                 std::vector<Tensor>& frozen) {
  for (const auto& [name, dims] : input_dims) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("model has no input named '" + name + "'", ErrorKind::InvalidArgument);
  }
  for (int id : g.inputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    auto it = input_dims.find(v.name);
    if (it == input_dims.end()) throw Error("no shape given for input '" + v.name + "'", ErrorKind::InvalidArgument);
    const Dims& dims = it->second;
    if (v.shape) {
      if (v.shape->size() != dims.size())
        throw Error("input '" + v.name + "' has rank " + std::to_string(v.shape->size()) + " " +
                    shape_to_string(*v.shape) + ", got rank " + std::to_string(dims.size()) + " " +
                    dims_to_string(dims),
                    ErrorKind::InvalidArgument);
      for (size_t i = 0; i < dims.size(); ++i)
        if ((*v.shape)[i].is_static() && (*v.shape)[i].value != dims[i])
          throw Error("input '" + v.name + "' has shape " + shape_to_string(*v.shape) + ", got " +
                      dims_to_string(dims),
                      ErrorKind::InvalidArgument);
    }
    size_t index = static_cast<size_t>(std::find(g.inputs.begin(), g.inputs.end(), id) - g.inputs.begin());
    types[index] = {v.dtype, dims};
    if (auto f = frozen_inputs.find(v.name); f != frozen_inputs.end()) {
      if (f->second.dtype() != v.dtype || f->second.dims() != dims)
        throw Error("frozen input '" + v.name + "' does not match its bound type", ErrorKind::InvalidArgument);
      frozen[index] = f->second;
    }
  }
  for (const auto& [name, value] : frozen_inputs) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("frozen input '" + name + "' is not a model input", ErrorKind::InvalidArgument);
  }
}

void set_live_tokens(const Plan& plan, int64_t tokens) {
  for (Kernel* k : plan.token_row_kernels) k->set_live_rows(tokens);
}

// Records the caller's tensors for shared inputs, checked against their bound types.
void bind_shared_inputs(Plan& plan, const std::map<std::string, Tensor>& shared) {
  if (shared.empty()) return;
  const Graph& g = *plan.graph;
  plan.shared.assign(plan.types.size(), Tensor());
  for (const auto& [name, t] : shared) {
    const int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("shared input '" + name + "' is not an input of the model", ErrorKind::InvalidArgument);
    const TensorType& want = plan.types[static_cast<size_t>(id)];
    if (t.dtype() != want.dtype || t.dims() != want.dims)
      throw Error("shared input '" + name + "' must be " + dtype_name(want.dtype) + " " + dims_to_string(want.dims) +
                      ", got " + dtype_name(t.dtype()) + " " + dims_to_string(t.dims()),
                  ErrorKind::InvalidArgument);
    plan.shared[static_cast<size_t>(id)] = t;
  }
}

Plan build_plan(std::shared_ptr<const Graph> graph, const std::map<std::string, Dims>& input_dims,
                const PlanOptions& options) {
  if (options.kernels == KernelChoice::Fast && !options.backend)
    throw Error("build_plan: a fast plan needs a backend (PlanOptions::backend)");
  std::vector<TensorType> in_types(graph->inputs.size());
  std::vector<Tensor> frozen(graph->inputs.size());
  bind_inputs(*graph, input_dims, options.frozen_inputs, in_types, frozen);
  FusionReport report;
  graph = compute_storage_types_in_float32(std::move(graph), in_types, frozen, ref::evaluate);
  std::shared_ptr<const Graph> source = graph;
  graph = inline_known_branches(graph, in_types, frozen);  // before fusion, so it sees the branch taken
  if (std::optional<FusionConfig> fusion = fusion_to_run(options)) {
    FusionResult fused = run_fusion_passes(*graph, in_types, frozen, *fusion, ref::evaluate);
    graph = fused.graph;
    report = std::move(fused.report);
  }
  if (options.packed_tokens)
    graph = std::make_shared<const Graph>(pack_attention(*graph, in_types, frozen, ref::evaluate));
  DeclinedFusions declined;
  Plan plan = build_steps(graph, in_types, frozen, options, declined);
  // A fused item whose kernel declines these shapes would run its body op by op in reference
  // kernels: put its nodes back instead, and say why.
  while (!declined.empty()) {
    Graph unfused = *plan.graph;
    for (const auto& [name, reason] : declined) {
      for (size_t n = 0; n < unfused.nodes.size(); ++n)
        if (unfused.nodes[n].op == Op::Fused && unfused.nodes[n].name == name) {
          NotFused nf{"plan", {}, reason};
          for (const Node& inner : unfused.nodes[n].body->nodes) nf.nodes.push_back(inner.name);
          report.not_fused.push_back(std::move(nf));
          inline_fused(unfused, static_cast<int>(n));
          break;
        }
      // Capture by a named reference: clang before 16 cannot capture a structured binding.
      const std::string& item_name = name;
      std::erase_if(report.items, [&](const FusionItem& item) { return item.name == item_name; });
    }
    declined.clear();
    plan = build_steps(std::make_shared<const Graph>(std::move(unfused)), in_types, frozen, options, declined);
  }
  plan.fusion = std::move(report);
  plan.source_graph = source;
  bind_shared_inputs(plan, options.shared_inputs);
  plan.openmp_team = std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& s) { return s.kernel->uses_openmp(); });
  if (options.memory_aware_order) schedule_for_memory(plan);
  if (options.blocked_layouts && options.kernels == KernelChoice::Fast) assign_blocked_layouts(plan);
  if (options.token_rows > 0) plan.token_row_kernels = token_row_kernels(plan, options.token_rows);
  return plan;
}

}  // namespace fusor
