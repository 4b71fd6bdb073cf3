#include "ir/conv_transpose_geometry.h"

#include <algorithm>
#include <string>

#include "ir/shape_util.h"

namespace fusor {
namespace {

int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

}  // namespace

std::vector<int64_t> ints_sized(const Node& node, const char* key, size_t n, int64_t fill) {
  auto v = node.attr_ints(key);
  if (v.empty()) return std::vector<int64_t>(n, fill);
  if (v.size() != n)
    fail(node, std::string(key) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(n));
  return v;
}

std::vector<TransposedAxis> conv_transpose_axes(const Node& node, const Dims& x, const Dims& kernel) {
  const size_t ns = x.size() - 2;
  if (kernel.size() != ns)
    fail(node, "kernel has " + std::to_string(kernel.size()) + " dims, input has " + std::to_string(ns) +
                   " spatial dims");
  auto strides = ints_sized(node, "strides", ns, 1);
  auto dilations = ints_sized(node, "dilations", ns, 1);
  auto out_pad = ints_sized(node, "output_padding", ns, 0);
  const bool has_pads = node.has_attr("pads");
  auto pads = ints_sized(node, "pads", 2 * ns, 0);
  // output_shape lists the spatial dims; older exporters wrote the full N, C, spatial... shape.
  auto output_shape = node.attr_ints("output_shape");
  if (output_shape.size() == ns + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != ns)
    fail(node, "output_shape has " + std::to_string(output_shape.size()) + " values for " + std::to_string(ns) +
                   " spatial dims");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "VALID" && auto_pad != "NOTSET" && !auto_pad.empty())
    fail(node, "unknown auto_pad '" + auto_pad + "'");

  std::vector<TransposedAxis> axes(ns);
  for (size_t d = 0; d < ns; ++d) {
    TransposedAxis& a = axes[d];
    a.in = x[d + 2];
    a.kernel = kernel[d];
    a.stride = strides[d];
    a.dilation = dilations[d];
    if (a.stride < 1 || a.dilation < 1 || a.kernel < 1 || out_pad[d] < 0)
      fail(node, "strides, dilations and kernel must be positive and output_padding not negative");
    // The extent when nothing is cropped: every input's window, plus output_padding at the end.
    const int64_t full = a.stride * (a.in - 1) + out_pad[d] + (a.kernel - 1) * a.dilation + 1;
    if (same) {
      a.out = output_shape.empty() ? a.in * a.stride : output_shape[d];
      const int64_t total = full - a.out;
      a.pad_begin = auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else if (auto_pad == "VALID") {
      a.out = output_shape.empty() ? full : output_shape[d];
    } else if (has_pads) {
      a.pad_begin = pads[d];
      a.out = output_shape.empty() ? full - pads[d] - pads[d + ns] : output_shape[d];
    } else if (!output_shape.empty()) {
      // Pads derived from output_shape, the larger half first; a larger output grows at the end.
      a.out = output_shape[d];
      const int64_t total = std::max<int64_t>(0, full - a.out);
      a.pad_begin = total - total / 2;
    } else {
      a.out = full;
    }
    if (a.out < 0)
      fail(node, "output size " + std::to_string(a.out) + " of spatial dim " + std::to_string(d) +
                     " is negative (input " + dims_to_string(x) + ")");
  }
  return axes;
}

}  // namespace fusor
