#include "ir/elementwise.h"

#include <algorithm>
#include <string>

#include "ir/shape_util.h"

namespace fusor {
namespace {

// Clip's bound at input i (1: min, 2: max) into `bound`; false when given but not known now.
bool read_bound(const Node& n, std::span<const TensorType> inputs, std::span<const Tensor* const> constants,
                size_t i, std::optional<double>& bound) {
  const bool omitted = i >= inputs.size() || inputs[i].dtype == DType::Undefined ||
                       (i < n.inputs.size() && n.inputs[i] < 0);
  if (omitted) return true;
  if (inputs[i].dtype != inputs[0].dtype)
    fail(n, std::string(i == 1 ? "min" : "max") + " has dtype " + dtype_name(inputs[i].dtype) + ", expected " +
                dtype_name(inputs[0].dtype));
  const Tensor* t = i < constants.size() ? constants[i] : nullptr;
  if (!t || t->numel() != 1) return false;
  bound = t->scalar_as_double();
  return true;
}

}  // namespace

bool is_unary_table_op(Op op) { return std::ranges::find(kUnaryTableOps, op) != std::end(kUnaryTableOps); }

UnaryTypes unary_types(Op op) {
  switch (op) {
#define FUSOR_UNARY_TYPES_(name, types, ...) \
  case Op::name: return UnaryTypes::types;
    FUSOR_UNARY_OPS(FUSOR_UNARY_TYPES_)
#undef FUSOR_UNARY_TYPES_
    default: throw Error(std::string(op_info(op).name) + " is not in the elementwise table");
  }
}

std::optional<UnaryParams> unary_params(const Node& n, std::span<const TensorType> inputs,
                                        std::span<const Tensor* const> constants) {
  UnaryParams p;
  switch (n.op) {
#define FUSOR_ATTR(member, fallback) p.member = n.attr_float(#member, fallback);
#define FUSOR_UNARY_READ_ATTRS_(name, types, flops, recompute, attributes) \
  case Op::name: {                                                        \
    attributes                                                            \
  } break;
    FUSOR_UNARY_OPS(FUSOR_UNARY_READ_ATTRS_)
#undef FUSOR_UNARY_READ_ATTRS_
#undef FUSOR_ATTR
    default: break;
  }
  if (n.op == Op::Gelu) {
    const std::string approx = n.attr_string("approximate", "none");
    if (approx == "tanh") {
      p.variant = 1;
      p.variant_name = "tanh";
    } else if (approx != "none") {
      fail(n, "approximate must be 'none' or 'tanh', got '" + approx + "'");
    }
  }
  if (n.op == Op::Clip) {
    if (n.opset < 11) {  // min and max are attributes
      if (n.has_attr("min")) p.lo = n.attr_float("min", 0);
      if (n.has_attr("max")) p.hi = n.attr_float("max", 0);
    } else if (!read_bound(n, inputs, constants, 1, p.lo) || !read_bound(n, inputs, constants, 2, p.hi)) {
      return std::nullopt;
    }
  }
  return p;
}

ElementwiseCost elementwise_cost(Op op) {
  enum { Cheap, Expensive };
  switch (op) {
#define FUSOR_UNARY_COST_(name, types, flops, recompute, ...) \
  case Op::name: return {flops, recompute == Expensive};
    FUSOR_UNARY_OPS(FUSOR_UNARY_COST_)
#undef FUSOR_UNARY_COST_
    case Op::Pow: return {1, true};
    case Op::Identity: case Op::Dropout: case Op::Cast: case Op::Expand: return {0, false};
    case Op::BatchNormalization: return {2, false};
    default: return {1, false};
  }
}

}  // namespace fusor
