#include "passes/token_locality.h"

#include <algorithm>
#include <cstring>

#include "ir/bind.h"
#include "passes/fused_kinds.h"

namespace fusor {
namespace {

constexpr int kConstant = -1;    // folded at plan time: the same for every token
constexpr int kNotPerToken = -2;
constexpr int kFromLength = -3;  // folded, but from the token count (Shape(ids)[1], a Range to it)

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Input `i` of `n` sets a shape, not values: a token count there (Reshape to [1, T, H, D])
// stays right when T is the packed stream's.
bool is_shape_operand(const Node& n, size_t i) {
  return i == 1 && (n.op == Op::Reshape || n.op == Op::Expand);
}

class TokenAxes {
 public:
  TokenAxes(const Binding& at_t, const Binding& at_t1, int64_t tokens) : a_(at_t), b_(at_t1), t_(tokens) {}

  // The token axis of `value`, kConstant, kFromLength or kNotPerToken.
  int of(int value) const {
    if (value < 0) return kConstant;
    if (a_.is_constant(value)) {
      const size_t v = static_cast<size_t>(value);
      return b_.is_constant(value) && same_tensor(a_.constants[v], b_.constants[v]) ? kConstant : kFromLength;
    }
    const Dims& d = a_.types[static_cast<size_t>(value)].dims;
    const Dims& e = b_.types[static_cast<size_t>(value)].dims;
    if (d.size() != e.size()) return kNotPerToken;
    int axis = kNotPerToken;
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] == e[i]) continue;
      if (axis >= 0 || d[i] != t_ || e[i] != t_ + 1) return kNotPerToken;
      axis = static_cast<int>(i);
    }
    for (int i = 0; i < axis; ++i)
      if (d[static_cast<size_t>(i)] != 1) return kNotPerToken;
    return axis;
  }
  const Dims& dims(int value) const { return a_.types[static_cast<size_t>(value)].dims; }
  const Binding& binding() const { return a_; }

 private:
  const Binding& a_;
  const Binding& b_;
  int64_t t_;
};

int64_t normalized(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// Axes a reduction reads: its `axes` attribute or constant second input; empty when all.
std::vector<int64_t> reduce_axes(const Node& n, const Binding& b) {
  if (n.has_attr("axes")) return n.attr_ints("axes");
  if (n.inputs.size() > 1 && n.inputs[1] >= 0 && b.is_constant(n.inputs[1]))
    return b.constants[static_cast<size_t>(n.inputs[1])].to_int64_vector();
  return {};
}

// Why node `n`, whose first input has token axis `axis`, may mix tokens; nothing when it cannot.
std::optional<std::string> mixes_tokens(const Node& n, const TokenAxes& t) {
  const int axis = n.inputs.empty() ? kConstant : t.of(n.inputs[0]);
  const size_t rank = n.inputs.empty() || n.inputs[0] < 0 ? 0 : t.dims(n.inputs[0]).size();
  auto weight_is_constant = [&] { return n.inputs.size() > 1 && t.of(n.inputs[1]) == kConstant; };
  auto over_features = [&](int64_t a) { return axis < 0 || normalized(a, rank) > axis; };
  if (n.op == Op::Fused) {
    if (is_fused_kind(n, FusedKind::Elementwise) || is_fused_kind(n, FusedKind::Gelu)) return std::nullopt;
    if (is_fused_kind(n, FusedKind::LayerNorm))
      return over_features(n.attr_int("axis", -1)) ? std::nullopt
                                                   : std::optional<std::string>("it normalizes over tokens");
    if (is_fused_kind(n, FusedKind::Rotary))  // pairs elements of the last axis
      return over_features(-1) ? std::nullopt : std::optional<std::string>("it rotates along the token axis");
    if (is_fused_kind(n, FusedKind::FusedMatMul)) {
      if (!weight_is_constant()) return "it multiplies two computed tensors";
      return axis == static_cast<int>(rank) - 1 ? std::optional<std::string>("it contracts over tokens") : std::nullopt;
    }
    return "fused " + n.op_type + " is not known to work token by token";
  }
  switch (n.op) {
    case Op::Reshape: case Op::Flatten: case Op::Squeeze: case Op::Unsqueeze: case Op::Identity:
    case Op::Dropout: case Op::Cast:
      return std::nullopt;  // the token layout of input and output is checked on the values
    case Op::Gather:
      if (t.of(n.inputs[0]) != kConstant) return "it gathers from a computed tensor";
      return std::nullopt;  // a table lookup per token
    case Op::MatMul:
    case Op::Gemm:
      if (!weight_is_constant()) return "it multiplies two computed tensors";
      if (n.op == Op::Gemm && n.attr_int("transA", 0) != 0) return "it transposes its computed input";
      return axis == static_cast<int>(rank) - 1 ? std::optional<std::string>("it contracts over tokens") : std::nullopt;
    case Op::Softmax: case Op::LogSoftmax: case Op::LayerNormalization:
      return over_features(n.attr_int("axis", -1)) ? std::nullopt
                                                   : std::optional<std::string>("it normalizes over tokens");
    default:
      break;
  }
  const OpCategory c = op_info(n.op).category;
  if (c == OpCategory::Elementwise || c == OpCategory::Broadcast) return std::nullopt;
  if (c == OpCategory::Reduction && n.op_type.rfind("Reduce", 0) == 0) {
    std::vector<int64_t> axes = reduce_axes(n, t.binding());
    if (axes.empty()) return "it reduces over every axis";
    for (int64_t a : axes)
      if (!over_features(a)) return std::string("it reduces over tokens");
    return std::nullopt;
  }
  return std::string("it is not known to work token by token");
}

}  // namespace

std::optional<std::string> token_locality_violation(const Graph& g, std::span<const TensorType> in_types,
                                                    std::span<const Tensor> frozen, EvaluateFn evaluate) {
  if (in_types.empty() || in_types[0].dims.size() != 2) return "the token inputs are not bound as [1, T]";
  std::vector<TensorType> grown(in_types.begin(), in_types.end());
  for (TensorType& t : grown) {
    if (t.dims.size() != 2 || t.dims[0] != 1 || t.dims[1] != in_types[0].dims[1])
      return "the token inputs are not bound as [1, T]";
    ++t.dims[1];
  }
  for (const Tensor& f : frozen)
    if (f.defined()) return "an input is frozen to one value";
  const Binding at_t = bind_graph(g, in_types, frozen, evaluate);
  const Binding at_t1 = bind_graph(g, grown, frozen, evaluate);
  const TokenAxes axes(at_t, at_t1, in_types[0].dims[1]);
  for (const Node& n : g.nodes) {
    if (at_t.folded(n) || n.has_attr("segments")) continue;
    // Packed, a count of tokens is the whole stream's: positions from Range(0, Shape(ids)[1])
    // would run on across requests instead of starting at 0 for each.
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (axes.of(n.inputs[i]) == kFromLength && !is_shape_operand(n, i))
        return n.describe() + " reads '" + g.values[static_cast<size_t>(n.inputs[i])].name +
               "', which is computed from the sequence length: packed, it would be the whole batch's";
    for (int o : n.outputs) {
      if (o < 0 || axes.of(o) != kNotPerToken) continue;
      return n.describe() + " computes '" + g.values[static_cast<size_t>(o)].name + "' " +
             dims_to_string(axes.dims(o)) + ", which is not one row per token";
    }
    if (auto why = mixes_tokens(n, axes)) return n.describe() + " may mix tokens: " + *why;
  }
  for (int o : g.outputs)
    if (axes.of(o) != 1)
      return "output '" + g.values[static_cast<size_t>(o)].name + "' " + dims_to_string(axes.dims(o)) +
             " is not laid out [1, tokens, ...]";
  return std::nullopt;
}

}  // namespace fusor
