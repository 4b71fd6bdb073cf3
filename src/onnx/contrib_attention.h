// The attention-family expansions (contrib_attention.cc), listed in contrib_ops.cc's op table.
#pragma once
#include "onnx/contrib_builder.h"
#include "onnx/contrib_ops.h"

namespace fusor::contrib {

void attention(ContribExpander& ex, NodeBuilder& b);
void rotary_embedding(ContribExpander& ex, NodeBuilder& b);
void group_query_attention(ContribExpander& ex, NodeBuilder& b);

}  // namespace fusor::contrib
