// Control-flow nodes (If, Loop, Scan) run subgraphs. This header says how a node's inputs map
// onto its subgraphs' inputs, and evaluates the subgraphs with whatever is known: at plan time
// (types, and values where the inputs are constant) for the shape functions and folding, and at
// run time (every input known) for the reference kernels. One implementation for both, so the
// shapes a plan allocates are the shapes the kernel produces.
#pragma once
#include <span>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// The importer makes the outer-scope values a node's subgraphs read explicit: they become
// trailing inputs of the node and, in the same order, trailing inputs of every subgraph (after
// the op's own subgraph inputs). This attribute counts them; absent means none.
inline constexpr const char* kOuterInputsAttr = "fusor_outer_inputs";
size_t outer_input_count(const Node& n);

// One value as far as it is known: its type, and its contents when known (undefined otherwise).
struct KnownValue {
  TensorType type;
  Tensor value;
};

// The outputs of control node `n` (If, Loop or Scan), one per node output (entries for omitted
// outputs are typed anyway). Throws fusor::Error naming the node on malformed subgraphs and when
// the output shapes depend on data not known here: a Loop's iteration count, or an If whose
// condition is unknown and whose branches give different shapes.
std::vector<KnownValue> evaluate_control(const Node& n, std::span<const KnownValue> inputs, EvaluateFn evaluate);

// Binds `g` with `inputs` (one per g.inputs) and returns its outputs: the subgraph runner. With
// every input known, every output is known. `what` names the subgraph in errors.
std::vector<KnownValue> run_subgraph(const Node& n, const Graph& g, const std::string& what,
                                     std::span<const KnownValue> inputs, EvaluateFn evaluate);

}  // namespace fusor
