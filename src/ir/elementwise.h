// What the layers below the kernels know about elementwise ops, from the elementwise table
// (ir/elementwise_table.h): which ops are table rows, their parameters read from a node in one
// place, and the cost of every elementwise and broadcast op.
#pragma once
#include <optional>
#include <span>
#include <string_view>

#include "ir/graph.h"

namespace fusor {

// The ops of the elementwise table, in row order.
inline constexpr Op kUnaryTableOps[] = {
#define FUSOR_UNARY_OP_ENUM_(name, ...) Op::name,
    FUSOR_UNARY_OPS(FUSOR_UNARY_OP_ENUM_)
#undef FUSOR_UNARY_OP_ENUM_
};
bool is_unary_table_op(Op op);

enum class UnaryTypes { Float, Signed, Numeric };
UnaryTypes unary_types(Op op);  // a table op's input element types

// Parameters of a table op, read from its node: float attributes with the spec's defaults,
// Gelu's approximation as variant 0 (erf) or 1 (tanh, variant_name "tanh"), and Clip's bounds
// (attributes before opset 11, scalar inputs after; absent when not given).
struct UnaryParams {
  float alpha = 0, beta = 0, gamma = 0, bias = 0, lambd = 0;
  int variant = 0;
  std::string_view variant_name;
  std::optional<double> lo, hi;
};

// The parameters of table op `node`. `inputs` are its input types (Undefined: omitted) and
// `constants` the values known now (nullptr otherwise), as in InferContext. Returns nullopt when
// a parameter input (a Clip bound) is not a scalar known now; throws fusor::Error naming the node
// for an invalid attribute or a bound of another dtype than input 0.
std::optional<UnaryParams> unary_params(const Node& node, std::span<const TensorType> inputs,
                                        std::span<const Tensor* const> constants);

// Cost of an elementwise or broadcast op per output element (the table's for its rows; Pow is
// expensive, copies and casts cost 0 FLOPs, BatchNormalization 2, any other op 1).
struct ElementwiseCost {
  double flops = 1;
  bool expensive = false;
};
ElementwiseCost elementwise_cost(Op op);

}  // namespace fusor
