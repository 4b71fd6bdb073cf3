// Binding: every value of a graph gets a concrete type, and every value computable without
// the graph's runtime inputs (weights, shape subgraphs, frozen inputs) gets its value.
#pragma once
#include <span>
#include <vector>

#include "ir/graph.h"

namespace fusor {

struct Binding {
  std::vector<TensorType> types;  // per value id
  std::vector<Tensor> constants;  // per value id; defined for constants and folded values
  bool is_constant(int value) const { return constants[static_cast<size_t>(value)].defined(); }
  // True when every defined output of `n` was folded: the node needs no kernel.
  bool folded(const Node& n) const;
};

// `inputs[i]` is the type of graph.inputs[i]; `frozen[i]`, when defined, is its fixed value
// (it must match the type). Nodes are typed in order by their shape functions; a node whose
// inputs are all constant, and every Shape node, is folded with `evaluate` (ref::evaluate, the
// reference kernels), except an op that writes its inputs (op_writes_inputs). Throws
// fusor::Error naming the node when a shape function rejects its inputs.
Binding bind_graph(const Graph& graph, std::span<const TensorType> inputs, std::span<const Tensor> frozen,
                   EvaluateFn evaluate);

}  // namespace fusor
