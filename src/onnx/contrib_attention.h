// The attention-family expansions (contrib_attention.cc), listed in contrib_ops.cc's op table.
#pragma once
#include "onnx/contrib_builder.h"
#include "onnx/contrib_ops.h"

namespace fusor::contrib {

void attention(ContribExpander& ex, NodeBuilder& b);

// Rotates the first `rd` features of the last axis of the 4-D `x` by the angles whose cos and
// sin broadcast against x's [..., rd/2]: pairs (x[2i], x[2i+1]) when `interleaved`, else halves
// (x[i], x[i + rd/2]). `keep_rest` keeps the features after `rd`; the result is named `out`.
std::string rotate(NodeBuilder& b, const std::string& x, const std::string& cos, const std::string& sin, int64_t rd,
                   bool interleaved, bool keep_rest, const std::string& out);
void rotary_embedding(ContribExpander& ex, NodeBuilder& b);
void group_query_attention(ContribExpander& ex, NodeBuilder& b);

}  // namespace fusor::contrib
