// Ops of the math family (ir/op_rows_math.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(Min)
FUSOR_PENDING_OP(Max)
FUSOR_PENDING_OP(Mean)
FUSOR_PENDING_OP(Sum)
FUSOR_PENDING_OP(Mod)
FUSOR_PENDING_OP(BitShift)
FUSOR_PENDING_OP(And)
FUSOR_PENDING_OP(Or)
FUSOR_PENDING_OP(Xor)
FUSOR_PENDING_OP(BitwiseAnd)
FUSOR_PENDING_OP(BitwiseOr)
FUSOR_PENDING_OP(BitwiseXor)
FUSOR_PENDING_OP(GreaterOrEqual)
FUSOR_PENDING_OP(LessOrEqual)
FUSOR_PENDING_OP(PRelu)
FUSOR_PENDING_OP(BitwiseNot)
FUSOR_PENDING_OP(IsNaN)
FUSOR_PENDING_OP(IsInf)
FUSOR_PENDING_OP(CastLike)
}  // namespace fusor
