#include <algorithm>

#include "kernels/cpu/backend.h"
#include "plan/plan.h"
#include "plan/schedule.h"

namespace fusor {
namespace {

void bind_inputs(const Graph& g, const std::map<std::string, Dims>& input_dims, Plan& plan) {
  for (const auto& [name, dims] : input_dims) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("model has no input named '" + name + "'");
  }
  for (int id : g.inputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    auto it = input_dims.find(v.name);
    if (it == input_dims.end()) throw Error("no shape given for input '" + v.name + "'");
    const Dims& dims = it->second;
    if (v.shape) {
      if (v.shape->size() != dims.size())
        throw Error("input '" + v.name + "' has rank " + std::to_string(v.shape->size()) + " " +
                    shape_to_string(*v.shape) + ", got rank " + std::to_string(dims.size()) + " " +
                    dims_to_string(dims));
      for (size_t i = 0; i < dims.size(); ++i)
        if ((*v.shape)[i].is_static() && (*v.shape)[i].value != dims[i])
          throw Error("input '" + v.name + "' has shape " + shape_to_string(*v.shape) + ", got " +
                      dims_to_string(dims));
    }
    plan.types[static_cast<size_t>(id)] = {v.dtype, dims};
  }
}

// Ops whose first output is the first input's bytes under another shape.
bool is_view_op(const Node& n) {
  switch (n.op) {
    case Op::Reshape: case Op::Flatten: case Op::Squeeze: case Op::Unsqueeze: case Op::Identity:
      return true;
    case Op::Dropout:  // inference: identity, unless the mask output is wanted
      return n.outputs.size() < 2 || n.outputs[1] < 0;
    default:
      return false;
  }
}

bool foldable(const Node& n, const Plan& plan) {
  if (n.op == Op::Shape) return true;  // needs only the (bound) input type
  for (int v : n.inputs)
    if (v >= 0 && !plan.is_constant(v)) return false;
  return true;
}

}  // namespace

Plan build_plan(std::shared_ptr<const Graph> graph, const std::map<std::string, Dims>& input_dims,
                const PlanOptions& options) {
  const Graph& g = *graph;
  Plan plan;
  plan.graph = graph;
  plan.types.resize(g.values.size());
  plan.constants.resize(g.values.size());
  plan.alias_of.assign(g.values.size(), -1);
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].constant) {
      plan.constants[i] = *g.values[i].constant;
      plan.types[i] = {plan.constants[i].dtype(), plan.constants[i].dims()};
    }
  bind_inputs(g, input_dims, plan);
  for (const auto& [name, value] : options.frozen_inputs) {
    int id = g.find_value(name);
    if (id < 0 || std::find(g.inputs.begin(), g.inputs.end(), id) == g.inputs.end())
      throw Error("frozen input '" + name + "' is not a model input");
    const TensorType& t = plan.types[static_cast<size_t>(id)];
    if (value.dtype() != t.dtype || value.dims() != t.dims)
      throw Error("frozen input '" + name + "' does not match its bound type");
    plan.constants[static_cast<size_t>(id)] = value;
  }

  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    std::vector<TensorType> in_types;
    std::vector<const Tensor*> in_consts;
    for (int v : n.inputs) {
      in_types.push_back(v >= 0 ? plan.types[static_cast<size_t>(v)] : TensorType{});
      in_consts.push_back(v >= 0 && plan.is_constant(v) ? &plan.constants[static_cast<size_t>(v)] : nullptr);
    }
    InferContext ctx{n, in_types, in_consts};
    std::vector<TensorType> out_types = op_info(n.op).infer(ctx);
    if (out_types.size() < std::count_if(n.outputs.begin(), n.outputs.end(), [](int v) { return v >= 0; }))
      throw Error(n.describe() + ": shape function returned too few outputs");
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0 && o < out_types.size()) plan.types[static_cast<size_t>(n.outputs[o])] = out_types[o];

    if (foldable(n, plan)) {
      std::vector<Tensor> ins, outs;
      for (int v : n.inputs) {
        if (v < 0) ins.emplace_back();
        else if (plan.is_constant(v)) ins.push_back(plan.constants[static_cast<size_t>(v)]);
        else ins.push_back(Tensor::view(plan.types[v].dtype, plan.types[v].dims, nullptr));  // Shape: type only
      }
      for (const auto& t : out_types) outs.emplace_back(t.dtype, t.dims);
      op_info(n.op).reference(n, ins, outs);
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] >= 0) plan.constants[static_cast<size_t>(n.outputs[o])] = outs[o];
      continue;
    }

    if (options.kernels == KernelChoice::Fast && options.views && is_view_op(n) && n.outputs[0] >= 0 &&
        plan.types[static_cast<size_t>(n.outputs[0])].dtype == in_types[0].dtype) {
      plan.alias_of[static_cast<size_t>(n.outputs[0])] = n.inputs[0];
      continue;
    }

    Step step;
    step.node = static_cast<int>(ni);
    step.inputs = n.inputs;
    step.outputs = n.outputs;
    std::vector<TensorType> step_out(out_types.begin(), out_types.begin() + static_cast<long>(n.outputs.size()));
    if (options.kernels == KernelChoice::Fast)
      step.kernel = cpu::select_kernel(KernelRequest{n, in_types, in_consts, step_out});
    if (!step.kernel) step.kernel = make_reference_kernel(n);
    plan.steps.push_back(std::move(step));
  }
  if (options.memory_aware_order) schedule_for_memory(plan);
  return plan;
}

}  // namespace fusor
