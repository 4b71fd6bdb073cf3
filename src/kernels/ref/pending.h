// A placeholder for an op that has a row in the op table but no implementation yet: its shape
// function fails with UnsupportedOp, so a model using it is refused at load like any op fusor
// does not claim (op_is_pending tells the importer and `fusor inspect`). Used only while a family
// is being filled in.
#pragma once
#include "fusor/error.h"
#include "ir/op_functions.h"
#include "ir/op_pending.h"
#include "kernels/ref/reference.h"

#define FUSOR_PENDING_OP(name)                                                                      \
  std::vector<TensorType> shape::name(const InferContext& ctx) {                                   \
    throw Error(ctx.node.describe() + ": not implemented yet", ErrorKind::UnsupportedOp);           \
  }                                                                                                 \
  void ref::name(const Node& node, std::span<const Tensor>, std::span<Tensor>) {                    \
    throw Error(node.describe() + ": not implemented yet", ErrorKind::UnsupportedOp);               \
  }                                                                                                 \
  static const bool name##_marked_pending = (mark_op_pending(Op::name), true);
