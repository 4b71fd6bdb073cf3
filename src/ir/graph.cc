#include "ir/graph.h"

#include <queue>
#include <sstream>

namespace fusor {

std::string shape_to_string(const Shape& shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s << ", ";
    if (shape[i].is_static()) s << shape[i].value;
    else s << (shape[i].symbol.empty() ? "?" : shape[i].symbol);
  }
  s << ']';
  return s.str();
}

namespace {
template <class T>
const T* get_attr(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw Error(n.describe() + ": attribute '" + key + "' has the wrong type");
  return v;
}
}  // namespace

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const auto* v = get_attr<int64_t>(*this, key);
  return v ? *v : fallback;
}
float Node::attr_float(const std::string& key, float fallback) const {
  const auto* v = get_attr<float>(*this, key);
  return v ? *v : fallback;
}
std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const auto* v = get_attr<std::string>(*this, key);
  return v ? *v : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& key, std::vector<int64_t> fallback) const {
  const auto* v = get_attr<std::vector<int64_t>>(*this, key);
  return v ? *v : fallback;
}
std::vector<float> Node::attr_floats(const std::string& key, std::vector<float> fallback) const {
  const auto* v = get_attr<std::vector<float>>(*this, key);
  return v ? *v : fallback;
}
const Tensor* Node::attr_tensor(const std::string& key) const { return get_attr<Tensor>(*this, key); }
DType Node::attr_dtype(const std::string& key, DType fallback) const {
  const auto* v = get_attr<DType>(*this, key);
  return v ? *v : fallback;
}

std::string Node::describe() const {
  return "node '" + name + "' (op " + op_type + ")";
}

int Graph::add_value(Value v) {
  if (by_name_.count(v.name)) throw Error("value '" + v.name + "' is defined twice");
  int id = static_cast<int>(values.size());
  if (!v.name.empty()) by_name_[v.name] = id;
  values.push_back(std::move(v));
  return id;
}

int Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].inputs)
      if (v >= 0) c[static_cast<size_t>(v)].push_back(static_cast<int>(n));
  return c;
}

void Graph::reorder_nodes() {
  std::vector<int> producer(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].outputs)
      if (v >= 0) producer[static_cast<size_t>(v)] = static_cast<int>(n);
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].inputs)
      if (v >= 0 && producer[static_cast<size_t>(v)] >= 0) {
        ++pending[n];
        users[static_cast<size_t>(producer[static_cast<size_t>(v)])].push_back(static_cast<int>(n));
      }
  // Kahn's algorithm, always taking the earliest ready node: the order changes only where it must.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!pending[n]) ready.push(static_cast<int>(n));
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    for (int u : users[static_cast<size_t>(n)])
      if (--pending[static_cast<size_t>(u)] == 0) ready.push(u);
    sorted.push_back(std::move(nodes[static_cast<size_t>(n)]));
  }
  if (sorted.size() != nodes.size()) throw Error("graph rewrite created a cycle");
  nodes = std::move(sorted);
  for (Value& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].outputs)
      if (v >= 0) values[static_cast<size_t>(v)].producer = static_cast<int>(n);
}

}  // namespace fusor
