// Structural rewrites of a Graph: replace a set of nodes with one fused node that keeps them as
// its body, and the inverse (inline a fused node's body again). Both keep the Graph invariants
// (topological order, producers, unique names); the set's legality is the caller's business
// (see passes/legality.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

struct FusedBoundary {
  std::vector<int> inputs;   // values the set reads but does not produce, in order of first use
  std::vector<int> outputs;  // values the set produces that are used outside it or are graph outputs
};
// `leading_inputs` (a subset of the set's inputs) come first, in that order, so a fused kernel
// finds its operands at fixed positions.
FusedBoundary fused_boundary(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& leading_inputs = {});

// Replaces `nodes` (indices into g.nodes) with one node of op Fused, domain "fusor", op_type
// `kind`, name `name`, the given attributes, and the set as its body. Returns its index.
// `dtypes` (per value id of g, optional) stamps the body's values with their element types, so
// the body can be bound on its own (imported intermediates carry none).
int fuse_nodes(Graph& g, const std::vector<int>& nodes, const std::string& kind, const std::string& name,
               std::map<std::string, Attribute> attrs = {}, const std::vector<int>& leading_inputs = {},
               const std::vector<DType>& dtypes = {});

// Replaces fused node `node` with the nodes of its body (one level). Returns how many nodes it
// put back.
size_t inline_fused(Graph& g, int node);

// Removes nodes none of whose outputs is used (transitively) by a graph output.
void remove_dead_nodes(Graph& g);

// Appends a node of `op` on `inputs` writing value `output`, or a new value of `dtype` named
// `name` when `output` is -1 (a name for the node too); returns the value written. The node goes
// last: reorder_nodes() before relying on the order.
int append_node(Graph& g, Op op, std::vector<int> inputs, DType dtype, const std::string& name,
                std::map<std::string, Attribute> attrs = {}, int output = -1);
// append_node of a Cast of `input` to `to`.
int append_cast(Graph& g, int input, DType to, const std::string& name, int output = -1);

}  // namespace fusor
