#include "ir/quant_layout.h"

#include "ir/shape_util.h"

namespace fusor {

QuantLayout quant_layout(const Node& node, const Dims& x, const Dims& scale, const Dims* zero_point) {
  // Shapes must match, though a one-value zero point may be [1] beside a scalar scale.
  if (zero_point && *zero_point != scale && !(numel_of(*zero_point) == 1 && numel_of(scale) == 1))
    fail(node, "zero point " + dims_to_string(*zero_point) + " and scale " + dims_to_string(scale) +
                   " differ in shape", ErrorKind::InvalidModel);
  const int64_t block_size = node.opset >= 21 ? node.attr_int("block_size", 0) : 0;
  if (block_size < 0) fail(node, "block_size must be >= 0, got " + std::to_string(block_size), ErrorKind::InvalidModel);
  QuantLayout q;
  const int64_t scale_count = numel_of(scale);
  if (block_size == 0 && scale_count == 1 && scale.size() <= 1) return q;  // per tensor
  const auto rank = static_cast<int64_t>(x.size());
  if (rank == 0) fail(node, "a scale of shape " + dims_to_string(scale) + " needs an x of rank >= 1", ErrorKind::InvalidModel);
  const int64_t axis = normalize_axis(node.attr_int("axis", 1), rank, node);
  q.axis_len = x[axis];
  for (int64_t d = axis + 1; d < rank; ++d) q.inner *= x[d];
  if (block_size == 0) {
    if (scale.size() != 1 || scale[0] != x[axis])
      fail(node, "scale " + dims_to_string(scale) + " must be a scalar or a vector of x's dim " +
                     std::to_string(x[axis]) + " at axis " + std::to_string(axis) + " (x is " + dims_to_string(x) + ")",
           ErrorKind::InvalidModel);
    q.mode = QuantLayout::Mode::PerAxis;
    return q;
  }
  q.mode = QuantLayout::Mode::Blocked;
  q.block = block_size;
  q.blocks = (x[axis] + block_size - 1) / block_size;
  Dims want = x;
  want[axis] = q.blocks;
  if (scale != want)
    fail(node, "blocked scale " + dims_to_string(scale) + " must be " + dims_to_string(want) + " for x " +
                   dims_to_string(x) + ", axis " + std::to_string(axis) + " and block_size " + std::to_string(block_size),
         ErrorKind::InvalidModel);
  return q;
}

}  // namespace fusor
