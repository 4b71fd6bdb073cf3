#include "passes/legality.h"

#include <algorithm>
#include <set>

#include "ir/graph_edit.h"

namespace fusor {

std::optional<std::string> why_not_legal(const Graph& g, const std::vector<int>& nodes, const LegalityRules& rules) {
  if (nodes.empty()) return "nothing to fuse";
  std::set<int> in_set(nodes.begin(), nodes.end());
  auto consumers = g.consumers();
  auto value_name = [&](int v) { return "'" + g.values[static_cast<size_t>(v)].name + "'"; };
  FusedBoundary boundary = fused_boundary(g, nodes);
  if (!rules.allow_extra_outputs) {
    // Only values that leave the set at its end may be outputs: the last node's.
    int last = *std::max_element(nodes.begin(), nodes.end());
    const auto& last_outputs = g.nodes[static_cast<size_t>(last)].outputs;
    for (int v : boundary.outputs) {
      if (std::find(last_outputs.begin(), last_outputs.end(), v) != last_outputs.end()) continue;
      if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end())
        return value_name(v) + " is a graph output";
      for (int c : consumers[static_cast<size_t>(v)])
        if (!in_set.count(c))
          return value_name(v) + " is also used by " + g.nodes[static_cast<size_t>(c)].describe() + " outside the group";
    }
  }
  // A cycle: some output of the set reaches, through nodes outside it, a node inside it.
  std::vector<int> frontier(boundary.outputs.begin(), boundary.outputs.end());
  std::set<int> seen;
  while (!frontier.empty()) {
    int v = frontier.back();
    frontier.pop_back();
    for (int c : consumers[static_cast<size_t>(v)]) {
      if (in_set.count(c)) {
        if (std::find(boundary.outputs.begin(), boundary.outputs.end(), v) == boundary.outputs.end())
          return "fusing would create a cycle through " + g.nodes[static_cast<size_t>(c)].describe();
        continue;
      }
      if (!seen.insert(c).second) continue;
      for (int o : g.nodes[static_cast<size_t>(c)].outputs)
        if (o >= 0) frontier.push_back(o);
    }
  }
  return std::nullopt;
}

size_t intermediate_bytes_saved(const Graph& g, const Binding& b, const std::vector<int>& nodes) {
  FusedBoundary boundary = fused_boundary(g, nodes);
  size_t bytes = 0;
  for (int n : nodes)
    for (int v : g.nodes[static_cast<size_t>(n)].outputs) {
      if (v < 0 || std::find(boundary.outputs.begin(), boundary.outputs.end(), v) != boundary.outputs.end()) continue;
      const TensorType& t = b.types[static_cast<size_t>(v)];
      bytes += 2 * nbytes_of(t.dims, t.dtype);
    }
  return bytes;
}

}  // namespace fusor
