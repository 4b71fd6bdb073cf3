// Ops of the nn family (ir/op_rows_nn.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(GlobalMaxPool)
FUSOR_PENDING_OP(LpPool)
FUSOR_PENDING_OP(MaxUnpool)
}  // namespace fusor
