#include "ir/graph_edit.h"

#include <algorithm>
#include <set>

namespace fusor {

FusedBoundary fused_boundary(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& leading_inputs) {
  std::set<int> in_set(nodes.begin(), nodes.end());
  std::vector<int> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());
  FusedBoundary b;
  std::set<int> produced;
  for (int n : sorted)
    for (int v : g.nodes[static_cast<size_t>(n)].outputs)
      if (v >= 0) produced.insert(v);
  for (int v : leading_inputs) b.inputs.push_back(v);
  for (int n : sorted)
    for (int v : g.nodes[static_cast<size_t>(n)].inputs)
      if (v >= 0 && !produced.count(v) && std::find(b.inputs.begin(), b.inputs.end(), v) == b.inputs.end())
        b.inputs.push_back(v);
  auto consumers = g.consumers();
  for (int n : sorted)
    for (int v : g.nodes[static_cast<size_t>(n)].outputs) {
      if (v < 0) continue;
      bool outside = std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
      for (int c : consumers[static_cast<size_t>(v)]) outside = outside || !in_set.count(c);
      if (outside) b.outputs.push_back(v);
    }
  return b;
}

int fuse_nodes(Graph& g, const std::vector<int>& nodes, const std::string& kind, const std::string& name,
               std::map<std::string, Attribute> attrs, const std::vector<int>& leading_inputs,
               const std::vector<DType>& dtypes) {
  FusedBoundary boundary = fused_boundary(g, nodes, leading_inputs);
  std::vector<int> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end());

  auto body = std::make_shared<Graph>();
  body->name = name;
  body->opset = g.opset;
  std::map<int, int> to_body;
  auto map_value = [&](int v) {
    if (v < 0) return -1;
    auto it = to_body.find(v);
    if (it != to_body.end()) return it->second;
    Value copy = g.values[static_cast<size_t>(v)];
    copy.producer = -1;
    copy.constant.reset();  // constants arrive as inputs, so the body is a self-contained function
    if (static_cast<size_t>(v) < dtypes.size() && dtypes[static_cast<size_t>(v)] != DType::Undefined)
      copy.dtype = dtypes[static_cast<size_t>(v)];
    int id = body->add_value(std::move(copy));
    to_body[v] = id;
    return id;
  };
  for (int v : boundary.inputs) body->inputs.push_back(map_value(v));
  for (int n : sorted) {
    Node copy = g.nodes[static_cast<size_t>(n)];
    for (int& v : copy.inputs) v = map_value(v);
    for (int& v : copy.outputs) v = map_value(v);
    body->nodes.push_back(std::move(copy));
  }
  for (int v : boundary.outputs) body->outputs.push_back(to_body.at(v));
  body->reorder_nodes();

  Node fused;
  fused.name = name;
  fused.op_type = kind;
  fused.domain = "fusor";
  fused.op = Op::Fused;
  fused.opset = 1;
  fused.inputs = boundary.inputs;
  fused.outputs = boundary.outputs;
  fused.attrs = std::move(attrs);
  fused.body = std::move(body);

  // The fused node takes the place of the set's last node, which keeps the order close to the
  // source's; reorder_nodes then repairs any consumer that sat between the set's nodes.
  std::set<int> drop(nodes.begin(), nodes.end());
  std::vector<Node> kept;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (static_cast<int>(n) == sorted.back()) kept.push_back(std::move(fused));
    if (!drop.count(static_cast<int>(n))) kept.push_back(std::move(g.nodes[n]));
  }
  g.nodes = std::move(kept);
  g.reorder_nodes();
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].op == Op::Fused && g.nodes[n].name == name) return static_cast<int>(n);
  return -1;
}

size_t inline_fused(Graph& g, int node) {
  Node fused = std::move(g.nodes[static_cast<size_t>(node)]);
  g.nodes.erase(g.nodes.begin() + node);
  const Graph& body = *fused.body;
  std::vector<int> to_outer(body.values.size(), -1);
  for (size_t i = 0; i < body.inputs.size(); ++i) to_outer[static_cast<size_t>(body.inputs[i])] = fused.inputs[i];
  for (size_t i = 0; i < body.outputs.size(); ++i) to_outer[static_cast<size_t>(body.outputs[i])] = fused.outputs[i];
  for (size_t v = 0; v < body.values.size(); ++v) {
    if (to_outer[v] >= 0) continue;
    Value copy = body.values[v];
    copy.producer = -1;
    int existing = g.find_value(copy.name);
    // Values the fusion took out are still in g, unused: take them back. Anything else (a body
    // read from a file) gets a fresh name scoped by the fused node.
    bool free = existing >= 0 && g.values[static_cast<size_t>(existing)].producer < 0 &&
                !g.values[static_cast<size_t>(existing)].constant &&
                std::find(g.inputs.begin(), g.inputs.end(), existing) == g.inputs.end();
    if (free) {
      to_outer[v] = existing;
      continue;
    }
    if (body.values[v].constant) copy.constant = body.values[v].constant;
    while (g.find_value(copy.name) >= 0) copy.name = fused.name + "/" + copy.name;
    to_outer[v] = g.add_value(std::move(copy));
  }
  for (const Node& n : body.nodes) {
    Node copy = n;
    for (int& v : copy.inputs) v = v >= 0 ? to_outer[static_cast<size_t>(v)] : -1;
    for (int& v : copy.outputs) v = v >= 0 ? to_outer[static_cast<size_t>(v)] : -1;
    g.nodes.push_back(std::move(copy));
  }
  g.reorder_nodes();
  return body.nodes.size();
}

void remove_dead_nodes(Graph& g) {
  std::vector<bool> live_value(g.values.size(), false);
  for (int v : g.outputs) live_value[static_cast<size_t>(v)] = true;
  std::vector<bool> live_node(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    for (int v : n.outputs)
      if (v >= 0 && live_value[static_cast<size_t>(v)]) live_node[i] = true;
    if (live_node[i])
      for (int v : n.inputs)
        if (v >= 0) live_value[static_cast<size_t>(v)] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live_node[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  g.reorder_nodes();
}

int append_node(Graph& g, Op op, std::vector<int> inputs, DType dtype, const std::string& name,
                std::map<std::string, Attribute> attrs, int output) {
  if (output < 0) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    output = g.add_value(std::move(v));
  }
  Node n;
  n.op = op;
  n.op_type = op_info(op).name;
  n.opset = g.opset;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
  return output;
}

int append_cast(Graph& g, int input, DType to, const std::string& name, int output) {
  return append_node(g, Op::Cast, {input}, to, name, {{"to", to}}, output);
}

}  // namespace fusor
