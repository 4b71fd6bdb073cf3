// The subgraph runner, If, and the helpers Loop and Scan share.
#include <cstring>

#include "ir/bind.h"
#include "ir/control_flow_detail.h"
#include "ir/data_dependent.h"
#include "ir/shape_util.h"

namespace fusor {

size_t outer_input_count(const Node& n) {
  int64_t count = n.attr_int(kOuterInputsAttr, 0);
  if (count < 0 || static_cast<size_t>(count) > n.inputs.size())
    fail(n, std::string("attribute ") + kOuterInputsAttr + " is " + std::to_string(count) + ", the node has " +
                std::to_string(n.inputs.size()) + " inputs");
  return static_cast<size_t>(count);
}

std::vector<KnownValue> run_subgraph(const Node& n, const Graph& g, const std::string& what,
                                     std::span<const KnownValue> inputs, EvaluateFn evaluate) {
  if (inputs.size() != g.inputs.size())
    fail(n, what + " has " + std::to_string(g.inputs.size()) + " inputs, given " + std::to_string(inputs.size()));
  if (!evaluate) fail(n, "running its " + what + " needs an evaluator");
  std::vector<TensorType> types;
  std::vector<Tensor> frozen;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& declared = g.values[static_cast<size_t>(g.inputs[i])];
    const DType given = inputs[i].type.dtype;
    if (declared.dtype != DType::Undefined && given != DType::Undefined && declared.dtype != given)
      fail(n, what + " input '" + declared.name + "' is declared " + dtype_name(declared.dtype) + ", given " +
                  dtype_name(given));
    types.push_back(inputs[i].type);
    frozen.push_back(inputs[i].value);
  }
  Binding b;
  try {
    b = bind_graph(g, types, frozen, evaluate);
  } catch (const Error& e) {
    throw Error(n.describe() + ", " + what + ": " + e.what(), e.kind());  // say where the inner node is
  }
  std::vector<KnownValue> out;
  for (int v : g.outputs) {
    const auto id = static_cast<size_t>(v);
    if (b.types[id].dtype == DType::Undefined)
      fail(n, what + " output '" + g.values[id].name + "' has no type (is it an omitted input?)");
    out.push_back({b.types[id], b.constants[id]});
  }
  return out;
}

std::vector<KnownValue> evaluate_control(const Node& n, std::span<const KnownValue> inputs, EvaluateFn evaluate) {
  switch (n.op) {
    case Op::If: return control::eval_if(n, inputs, evaluate);
    case Op::Loop: return control::eval_loop(n, inputs, evaluate);
    case Op::Scan: return control::eval_scan(n, inputs, evaluate);
    default: fail(n, "is not a control-flow node");
  }
}

namespace control {

const Graph& subgraph(const Node& n, const char* name) {
  auto it = n.subgraphs.find(name);
  if (it == n.subgraphs.end() || !it->second) fail(n, std::string("needs graph attribute '") + name + "'");
  return *it->second;
}

Tensor scalar_int64(int64_t v) {
  Tensor t(DType::Int64, {});
  *t.data<int64_t>() = v;
  return t;
}

Tensor scalar_bool(bool v) {
  Tensor t(DType::Bool, {});
  *t.data<bool>() = v;
  return t;
}

KnownValue take_along(const KnownValue& v, int64_t axis, int64_t index) {
  const Dims& d = v.type.dims;
  Dims out_dims = d;
  out_dims.erase(out_dims.begin() + axis);
  KnownValue out{{v.type.dtype, out_dims}, {}};
  if (!v.value.defined()) return out;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= d[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  const size_t chunk = static_cast<size_t>(inner) * dtype_size(v.type.dtype);
  const int64_t n = d[static_cast<size_t>(axis)];
  out.value = Tensor(v.type.dtype, out_dims);
  const auto* src = static_cast<const std::byte*>(v.value.raw());
  auto* dst = static_cast<std::byte*>(out.value.raw());
  for (int64_t o = 0; o < outer && chunk; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * chunk, src + static_cast<size_t>(o * n + index) * chunk, chunk);
  return out;
}

KnownValue stack_along(const std::vector<Tensor>& parts, const TensorType& part, int64_t count, int64_t axis,
                       bool reverse) {
  Dims dims = part.dims;
  dims.insert(dims.begin() + axis, count);
  KnownValue out{{part.dtype, dims}, {}};
  if (static_cast<int64_t>(parts.size()) != count) return out;
  for (const Tensor& p : parts)
    if (!p.defined()) return out;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= part.dims[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis); i < part.dims.size(); ++i) inner *= part.dims[i];
  const size_t chunk = static_cast<size_t>(inner) * dtype_size(part.dtype);
  out.value = Tensor(part.dtype, dims);
  auto* dst = static_cast<std::byte*>(out.value.raw());
  for (int64_t t = 0; t < count; ++t) {
    const int64_t at = reverse ? count - 1 - t : t;
    const auto* src = static_cast<const std::byte*>(parts[static_cast<size_t>(t)].raw());
    for (int64_t o = 0; o < outer && chunk; ++o)
      std::memcpy(dst + static_cast<size_t>(o * count + at) * chunk, src + static_cast<size_t>(o) * chunk, chunk);
  }
  return out;
}

// If: the branch the condition picks; when the condition is unknown, both branches must agree
// on every output's type, since a plan allocates one shape.
std::vector<KnownValue> eval_if(const Node& n, std::span<const KnownValue> in, EvaluateFn evaluate) {
  const Graph& then_branch = subgraph(n, "then_branch");
  const Graph& else_branch = subgraph(n, "else_branch");
  const size_t outer = outer_input_count(n);
  if (in.size() != 1 + outer || in[0].type.dtype == DType::Undefined)
    fail(n, "needs exactly one condition input (and " + std::to_string(outer) + " outer-scope values)");
  if (numel_of(in[0].type.dims) != 1)
    fail(n, "condition must hold one element, got shape " + dims_to_string(in[0].type.dims));
  const auto captured = in.subspan(1);
  auto branch = [&](bool which) {
    const char* name = which ? "then_branch" : "else_branch";
    auto out = run_subgraph(n, which ? then_branch : else_branch, name, captured, evaluate);
    if (out.size() != n.outputs.size())
      fail(n, std::string(name) + " has " + std::to_string(out.size()) + " outputs, the node " +
                  std::to_string(n.outputs.size()));
    return out;
  };
  if (in[0].value.defined()) return branch(in[0].value.scalar_as_double(0) != 0);
  auto a = branch(true);
  auto b = branch(false);
  for (size_t o = 0; o < a.size(); ++o) {
    if (a[o].type.dtype != b[o].type.dtype || a[o].type.dims != b[o].type.dims)
      // A merged decoder's If (use_cache_branch): plan per run with the condition known.
      throw DataDependentShape(n.describe() + ": output " + std::to_string(o) + " is " +
                               dtype_name(a[o].type.dtype) + " " + dims_to_string(a[o].type.dims) +
                               " in then_branch and " + dtype_name(b[o].type.dtype) + " " +
                               dims_to_string(b[o].type.dims) + " in else_branch, so its shape depends on the condition");
    a[o].value = Tensor();
  }
  return a;
}

}  // namespace control
}  // namespace fusor
