// Ops of the control family (ir/op_rows_control.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(If)
FUSOR_PENDING_OP(Loop)
FUSOR_PENDING_OP(Scan)
}  // namespace fusor
