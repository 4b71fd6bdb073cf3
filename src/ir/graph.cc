#include "ir/graph.h"

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

}  // namespace fusor
