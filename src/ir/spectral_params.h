// Parameters of the spectral ops read the same way by their shape functions and kernels.
#pragma once
#include "ir/graph.h"

namespace fusor {

// The DFT axis, in [0, rank - 2]: an attribute before opset 20 (default 1), then the optional
// input `axis_input` (default -2). The last dim (real/imaginary) is never an axis.
int64_t dft_axis(const Node& node, const Tensor* axis_input, int64_t rank);

}  // namespace fusor
