// Ops of the quant family (ir/op_rows_quant.h) still without a shape function and reference
// kernel: loading a model that uses one fails with UnsupportedOp. Delete a line when the op lands.
#include "kernels/ref/pending.h"

namespace fusor {
FUSOR_PENDING_OP(QuantizeLinear)
FUSOR_PENDING_OP(DequantizeLinear)
FUSOR_PENDING_OP(DynamicQuantizeLinear)
FUSOR_PENDING_OP(MatMulInteger)
FUSOR_PENDING_OP(ConvInteger)
FUSOR_PENDING_OP(QLinearMatMul)
FUSOR_PENDING_OP(QLinearConv)
}  // namespace fusor
