// Reference Col2Im: the inverse of im2col. Input [N, C * prod(block_shape), L] holds, for each of
// the L sliding blocks over the padded image, its C x block values; each is added back at its
// image position (taps in the padding are dropped). Sums are taken in double.
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void Col2Im(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const Dims image(y.dims().begin() + 2, y.dims().end());
  const auto block = inputs[2].to_int64_vector();
  const size_t ns = image.size();
  const auto strides = node.attr_ints("strides", std::vector<int64_t>(ns, 1));
  const auto dil = node.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  const auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  Dims blocks(ns);
  for (size_t d = 0; d < ns; ++d)
    blocks[d] = (image[d] + pads[d] + pads[d + ns] - (dil[d] * (block[d] - 1) + 1)) / strides[d] + 1;
  const int64_t taps = numel_of(Dims(block.begin(), block.end())), n_blocks = numel_of(blocks);
  const int64_t image_vol = numel_of(image), planes = y.dim(0) * y.dim(1);
  // For each (tap, block): its flat image position, or -1 in the padding.
  std::vector<int64_t> target(static_cast<size_t>(taps * n_blocks));
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t b = 0; b < n_blocks; ++b) {
      int64_t pos = 0, rt = t, rb = b, tap_div = taps, block_div = n_blocks;
      bool inside = true;
      for (size_t d = 0; d < ns; ++d) {
        tap_div /= block[d];
        block_div /= blocks[d];
        const int64_t k = rt / tap_div, o = rb / block_div;
        rt %= tap_div;
        rb %= block_div;
        const int64_t i = o * strides[d] - pads[d] + k * dil[d];
        inside = inside && i >= 0 && i < image[d];
        pos = pos * image[d] + i;
      }
      target[static_cast<size_t>(t * n_blocks + b)] = inside ? pos : -1;
    }
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
#pragma omp parallel for
    for (int64_t pl = 0; pl < planes; ++pl) {
      std::vector<double> acc(static_cast<size_t>(image_vol), 0.0);
      const T* src = px + pl * taps * n_blocks;
      for (int64_t j = 0; j < taps * n_blocks; ++j)
        if (target[static_cast<size_t>(j)] >= 0) acc[static_cast<size_t>(target[static_cast<size_t>(j)])] += static_cast<double>(src[j]);
      for (int64_t i = 0; i < image_vol; ++i) py[pl * image_vol + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    }
  });
}

}  // namespace fusor::ref
