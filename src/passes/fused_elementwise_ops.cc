#include "passes/fused_elementwise_ops.h"

#include "ir/elementwise.h"
#include "passes/fused_kinds.h"

namespace fusor {

bool fused_elementwise_runs(const Node& n) {
  if (n.op == Op::Fused) return is_fused_kind(n, FusedKind::Gelu);
  if (is_unary_table_op(n.op)) return true;
  switch (n.op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::PRelu:
    case Op::Equal: case Op::Greater: case Op::Less: case Op::GreaterOrEqual: case Op::LessOrEqual:
    case Op::Where: case Op::Not: case Op::Cast: case Op::Identity: case Op::Dropout:
      return true;
    case Op::DequantizeLinear: case Op::QuantizeLinear:  // per tensor: the program checks
      return n.attr_int("block_size", 0) == 0;
    case Op::Min: case Op::Max:  // variadic: one instruction takes one or two operands
      return n.inputs.size() == 1 || n.inputs.size() == 2;
    default:
      return false;
  }
}

}  // namespace fusor
