// ArrayFeatureExtractor (ai.onnx.ml): gathers the listed indices (Y, flattened) along X's last
// axis; a 1-D X reads as one row.
#include <cstring>
#include <string>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void ArrayFeatureExtractor(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const std::vector<int64_t> picks = inputs[1].to_int64_vector();
  const int64_t width = x.dim(-1), rows = width == 0 ? 0 : x.numel() / width;
  for (int64_t i : picks)
    if (i < 0 || i >= width)
      fail(node, "index " + std::to_string(i) + " is out of range [0, " + std::to_string(width) + ")");
  const size_t esize = dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(outputs[0].raw());
  const auto count = static_cast<int64_t>(picks.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < count; ++k)
      std::memcpy(dst + static_cast<size_t>(r * count + k) * esize, src + static_cast<size_t>(r * width + picks[static_cast<size_t>(k)]) * esize,
                  esize);
}

}  // namespace fusor::ref
