// Ops of the index family (ir/op_rows_index.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(ReduceMin)
FUSOR_PENDING_OP(ReduceProd)
FUSOR_PENDING_OP(ReduceL1)
FUSOR_PENDING_OP(ReduceL2)
FUSOR_PENDING_OP(ReduceLogSum)
FUSOR_PENDING_OP(ReduceLogSumExp)
FUSOR_PENDING_OP(ReduceSumSquare)
FUSOR_PENDING_OP(ArgMax)
FUSOR_PENDING_OP(ArgMin)
FUSOR_PENDING_OP(Hardmax)
FUSOR_PENDING_OP(TopK)
FUSOR_PENDING_OP(CumSum)
FUSOR_PENDING_OP(OneHot)
FUSOR_PENDING_OP(Size)
}  // namespace fusor
