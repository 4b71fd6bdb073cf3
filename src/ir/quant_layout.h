// How QuantizeLinear's and DequantizeLinear's scale (and zero point) map onto the elements of x:
// one value for the whole tensor, one per index along `axis` (a 1-D scale), or, from opset 21
// with block_size > 0, one per block of block_size consecutive indices along `axis` (a scale
// of x's rank whose dim at `axis` is ceil(x_dim / block_size), the last block may be short).
#pragma once
#include <cstdint>

#include "ir/graph.h"

namespace fusor {

struct QuantLayout {
  enum class Mode { PerTensor, PerAxis, Blocked } mode = Mode::PerTensor;
  int64_t axis_len = 1;  // x's dim at the axis
  int64_t inner = 1;     // product of x's dims after the axis
  int64_t block = 1;     // block_size (Blocked)
  int64_t blocks = 1;    // scale's dim at the axis (Blocked)

  // The scale index of x's element at flat index i.
  int64_t param_index(int64_t i) const {
    switch (mode) {
      case Mode::PerTensor: return 0;
      case Mode::PerAxis: return (i / inner) % axis_len;
      case Mode::Blocked: {
        int64_t outer = i / (inner * axis_len), a = (i / inner) % axis_len, in = i % inner;
        return (outer * blocks + a / block) * inner + in;
      }
    }
    return 0;
  }
};

// Reads the node's axis and block_size attributes and checks `scale` (and `zero_point`, when
// given, which must have scale's shape) against x; throws naming the node on a mismatch.
QuantLayout quant_layout(const Node& node, const Dims& x, const Dims& scale, const Dims* zero_point);

}  // namespace fusor
