// The quantized expansions (contrib_quant.cc, contrib_matmul_nbits.cc), listed in contrib_ops.cc's
// op table. The QLinear* ops become DequantizeLinear -> float op -> QuantizeLinear; the integer
// matmuls become MatMulInteger with its float rescale; MatMulNBits a blocked DequantizeLinear of
// its weight, unpacked at import, feeding a MatMul.
#pragma once
#include "onnx/contrib_builder.h"
#include "onnx/contrib_ops.h"

namespace fusor::contrib {

void qlinear_add(ContribExpander& ex, NodeBuilder& b);
void qlinear_mul(ContribExpander& ex, NodeBuilder& b);
void qlinear_sigmoid(ContribExpander& ex, NodeBuilder& b);
void qlinear_leaky_relu(ContribExpander& ex, NodeBuilder& b);
void qlinear_global_average_pool(ContribExpander& ex, NodeBuilder& b);
void qlinear_average_pool(ContribExpander& ex, NodeBuilder& b);
void qlinear_concat(ContribExpander& ex, NodeBuilder& b);
void qlinear_softmax(ContribExpander& ex, NodeBuilder& b);
void qgemm(ContribExpander& ex, NodeBuilder& b);
void matmul_integer_to_float(ContribExpander& ex, NodeBuilder& b);
void dynamic_quantize_matmul(ContribExpander& ex, NodeBuilder& b);
void matmul_nbits(ContribExpander& ex, NodeBuilder& b);

}  // namespace fusor::contrib
