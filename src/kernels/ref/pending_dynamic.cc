// Ops of the dynamic family (ir/op_rows_dynamic.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(NonZero)
FUSOR_PENDING_OP(Unique)
FUSOR_PENDING_OP(Compress)
FUSOR_PENDING_OP(NonMaxSuppression)
}  // namespace fusor
