#include "plan/inline_branches.h"

#include <algorithm>
#include <set>

#include "ir/bind.h"
#include "ir/control_flow.h"
#include "ir/graph_edit.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

// Inlined branches may hold Ifs of their own, known once the outer one is gone: a few rounds.
constexpr int kMaxRounds = 8;

std::string unused_name(const Graph& g, std::string name) {
  while (g.find_value(name) >= 0) name += "_";
  return name;
}

// Replaces If node `index` of `g` with the nodes of the branch `taken`, by way of a fused node
// whose body is the branch (its inputs are the node's outer-scope inputs).
void inline_branch(Graph& g, int index, bool taken) {
  Node& n = g.nodes[static_cast<size_t>(index)];
  const size_t outer = outer_input_count(n);
  Graph branch = *n.subgraphs.at(taken ? "then_branch" : "else_branch");
  // inline_fused maps each body output onto a node output, so each must be a distinct value
  // made by a body node: an output that passes an input or constant through, or repeats, gets
  // an Identity.
  std::set<int> seen;
  for (size_t o = 0; o < branch.outputs.size(); ++o) {
    const int v = branch.outputs[o];
    if (branch.values[static_cast<size_t>(v)].producer >= 0 && seen.insert(v).second) continue;
    Value copy;
    copy.name = unused_name(branch, branch.values[static_cast<size_t>(v)].name + "/out" + std::to_string(o));
    copy.dtype = branch.values[static_cast<size_t>(v)].dtype;
    Node identity;
    identity.name = "output" + std::to_string(o);
    identity.op_type = "Identity";
    identity.op = Op::Identity;
    identity.opset = static_cast<int>(branch.opset);
    identity.inputs = {v};
    identity.outputs = {branch.add_value(std::move(copy))};
    branch.outputs[o] = identity.outputs[0];
    branch.nodes.push_back(std::move(identity));
  }
  branch.reorder_nodes();
  for (Node& inner : branch.nodes) inner.name = n.name + "/" + inner.name;  // node names stay unique
  n.op = Op::Fused;
  n.inputs.erase(n.inputs.begin(), n.inputs.end() - static_cast<std::ptrdiff_t>(outer));
  n.attrs.clear();
  n.subgraphs.clear();
  n.body = std::make_shared<const Graph>(std::move(branch));
  inline_fused(g, index);
}

}  // namespace

std::shared_ptr<const Graph> inline_known_branches(std::shared_ptr<const Graph> graph,
                                                   std::span<const TensorType> inputs,
                                                   std::span<const Tensor> frozen) {
  for (int round = 0; round < kMaxRounds; ++round) {
    if (std::none_of(graph->nodes.begin(), graph->nodes.end(), [](const Node& n) { return n.op == Op::If; }))
      return graph;
    const Binding b = bind_graph(*graph, inputs, frozen, ref::evaluate);
    const auto bound = static_cast<int>(b.types.size());  // values added by inlining are not in b
    auto known = [&](const Node& n) {
      return n.op == Op::If && !n.inputs.empty() && n.inputs[0] >= 0 && n.inputs[0] < bound &&
             b.is_constant(n.inputs[0]) &&
             std::all_of(n.outputs.begin(), n.outputs.end(), [&](int v) { return v < bound; }) && !b.folded(n);
    };
    Graph out = *graph;
    bool changed = false;
    for (;;) {
      auto it = std::find_if(out.nodes.begin(), out.nodes.end(), known);
      if (it == out.nodes.end()) break;
      const bool taken = b.constants[static_cast<size_t>(it->inputs[0])].scalar_as_double(0) != 0;
      inline_branch(out, static_cast<int>(it - out.nodes.begin()), taken);
      changed = true;
    }
    if (!changed) return graph;
    graph = std::make_shared<const Graph>(std::move(out));
  }
  return graph;
}

}  // namespace fusor
