// Sliding-window geometry shared by the reference Conv and pooling kernels, padded to three
// spatial dims (leading unit dims for 1D and 2D) so one loop nest serves all ranks.
#pragma once
#include <algorithm>
#include <array>
#include <string>

#include "ir/graph.h"

namespace fusor::ref {

struct Window {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pb{0, 0, 0}, pe{0, 0, 0};
};

// `x` and `y` are the NC... input and output dims; `kernel` the spatial kernel extent.
inline Window window_of(const Node& node, const Dims& x, const Dims& y, const Dims& kernel) {
  Window w;
  size_t ns = x.size() - 2, off = 3 - ns;
  auto strides = node.attr_ints("strides"), dil = node.attr_ints("dilations"), pads = node.attr_ints("pads");
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < ns; ++i) {
    size_t j = off + i;
    w.in[j] = x[i + 2];
    w.out[j] = y[i + 2];
    w.k[j] = kernel[i];
    w.s[j] = strides.empty() ? 1 : strides[i];
    w.d[j] = dil.empty() ? 1 : dil[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(0, (w.out[j] - 1) * w.s[j] + (w.k[j] - 1) * w.d[j] + 1 - w.in[j]);
      w.pb[j] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pe[j] = total - w.pb[j];
    } else if (auto_pad != "VALID" && !pads.empty()) {
      w.pb[j] = pads[i];
      w.pe[j] = pads.size() == 2 * ns ? pads[i + ns] : 0;
    }
  }
  return w;
}

}  // namespace fusor::ref
