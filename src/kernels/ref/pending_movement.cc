// Ops of the movement family (ir/op_rows_movement.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(Pad)
FUSOR_PENDING_OP(Tile)
FUSOR_PENDING_OP(Resize)
FUSOR_PENDING_OP(Upsample)
FUSOR_PENDING_OP(DepthToSpace)
FUSOR_PENDING_OP(SpaceToDepth)
FUSOR_PENDING_OP(GatherElements)
FUSOR_PENDING_OP(GatherND)
FUSOR_PENDING_OP(ScatterElements)
FUSOR_PENDING_OP(ScatterND)
FUSOR_PENDING_OP(Scatter)
FUSOR_PENDING_OP(ReverseSequence)
FUSOR_PENDING_OP(EyeLike)
FUSOR_PENDING_OP(CenterCropPad)
}  // namespace fusor
