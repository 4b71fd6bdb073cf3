// ConvTranspose's geometry per spatial dim, shared by its shape function and its kernels so that
// they agree on where each input lands: output position o = i * stride + k * dilation - pad_begin.
// pad_begin follows ONNX: explicit pads, or derived from output_shape / auto_pad.
#pragma once
#include <vector>

#include "ir/graph.h"

namespace fusor {

struct TransposedAxis {
  int64_t in = 0, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, out = 0;
};

// `x` is the N, C, spatial... input shape and `kernel` the spatial kernel extent. Fails naming
// the node on attributes that do not fit (wrong lengths, non-positive strides, negative sizes).
std::vector<TransposedAxis> conv_transpose_axes(const Node& node, const Dims& x, const Dims& kernel);

// A per-axis int attribute of Conv or ConvTranspose (strides, dilations, pads...): `n` copies of
// `fill` when absent, else exactly `n` values or a failure naming the node.
std::vector<int64_t> ints_sized(const Node& node, const char* key, size_t n, int64_t fill);

}  // namespace fusor
