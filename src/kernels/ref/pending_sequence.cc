// Ops of the sequence family (ir/op_rows_sequence.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(RoiAlign)
FUSOR_PENDING_OP(GridSample)
FUSOR_PENDING_OP(AffineGrid)
}  // namespace fusor
