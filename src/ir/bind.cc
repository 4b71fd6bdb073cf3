#include "ir/bind.h"

#include <algorithm>

namespace fusor {
namespace {

bool foldable(const Node& n, const Binding& b) {
  if (n.op == Op::Shape) return true;  // needs only the (bound) input type
  if (op_writes_inputs(n.op)) return false;  // its effect is on the run's tensors, not a value
  for (int v : n.inputs)
    if (v >= 0 && !b.is_constant(v)) return false;
  return true;
}

void fold(const Node& n, const std::vector<TensorType>& out_types, EvaluateFn evaluate, Binding& b) {
  std::vector<Tensor> ins, outs;
  for (int v : n.inputs) {
    if (v < 0) ins.emplace_back();
    else if (b.is_constant(v)) ins.push_back(b.constants[static_cast<size_t>(v)]);
    else ins.push_back(Tensor::view(b.types[v].dtype, b.types[v].dims, nullptr));  // Shape: type only
  }
  for (const auto& t : out_types) outs.emplace_back(t.dtype, t.dims);
  evaluate(n, ins, outs);
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= 0) b.constants[static_cast<size_t>(n.outputs[o])] = outs[o];
}

}  // namespace

bool Binding::folded(const Node& n) const {
  return std::all_of(n.outputs.begin(), n.outputs.end(), [&](int v) { return v < 0 || is_constant(v); });
}

Binding bind_graph(const Graph& g, std::span<const TensorType> inputs, std::span<const Tensor> frozen,
                   EvaluateFn evaluate) {
  Binding b;
  b.types.resize(g.values.size());
  b.constants.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].constant) {
      b.constants[i] = *g.values[i].constant;
      b.types[i] = {b.constants[i].dtype(), b.constants[i].dims()};
    }
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) {
    auto id = static_cast<size_t>(g.inputs[i]);
    b.types[id] = inputs[i];
    if (i < frozen.size() && frozen[i].defined()) b.constants[id] = frozen[i];
  }
  for (const Node& n : g.nodes) {
    std::vector<TensorType> in_types;
    std::vector<const Tensor*> in_consts;
    for (int v : n.inputs) {
      in_types.push_back(v >= 0 ? b.types[static_cast<size_t>(v)] : TensorType{});
      in_consts.push_back(v >= 0 && b.is_constant(v) ? &b.constants[static_cast<size_t>(v)] : nullptr);
    }
    std::vector<TensorType> out_types = op_info(n.op).infer(InferContext{n, in_types, in_consts, evaluate});
    if (out_types.size() < static_cast<size_t>(std::count_if(n.outputs.begin(), n.outputs.end(), [](int v) { return v >= 0; })))
      throw Error(n.describe() + ": shape function returned too few outputs");
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0 && o < out_types.size()) b.types[static_cast<size_t>(n.outputs[o])] = out_types[o];
    if (foldable(n, b)) fold(n, out_types, evaluate, b);
  }
  return b;
}

}  // namespace fusor
