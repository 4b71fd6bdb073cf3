// Gather: viewing data as [outer, axis, inner], each index selects one contiguous block of
// `inner` elements per outer row (an embedding lookup is outer = 1, one row per index).
#include <cstring>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void Gather(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const Tensor& idx = inputs[1];
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(data.rank()), node));
  const int64_t extent = data.dims()[axis];
  std::vector<int64_t> indices = idx.to_int64_vector();
  for (int64_t& i : indices) {
    if (i < -extent || i >= extent)
      fail(node, "index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                     " of size " + std::to_string(extent),
           ErrorKind::InvalidArgument);  // the values fed, not the model
    if (i < 0) i += extent;
  }
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < data.rank(); ++d)
    if (d < axis) outer *= data.dims()[d];
    else if (d > axis) inner *= data.dims()[d];
  const size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(outputs[0].raw());
  if (block == 0) return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : indices) {
      std::memcpy(dst, src + static_cast<size_t>(o * extent + i) * block, block);
      dst += block;
    }
}

}  // namespace fusor::ref
