// ONNX's own ops of opsets 23 and 24 that the importer expands into older ops, as it expands ONNX
// Runtime's contrib ops (contrib_ops.h lists both): Attention, RMSNormalization, RotaryEmbedding,
// Swish and TensorScatter.
#pragma once
#include "onnx/contrib_builder.h"
#include "onnx/contrib_ops.h"

namespace fusor::contrib {

void onnx_attention(ContribExpander& ex, NodeBuilder& b);
void onnx_rms_normalization(ContribExpander& ex, NodeBuilder& b);
void onnx_rotary_embedding(ContribExpander& ex, NodeBuilder& b);
void onnx_swish(ContribExpander& ex, NodeBuilder& b);
void onnx_tensor_scatter(ContribExpander& ex, NodeBuilder& b);

}  // namespace fusor::contrib
