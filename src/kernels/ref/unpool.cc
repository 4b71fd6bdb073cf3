// Reference MaxUnpool: scatters each value of X to the flat position its index names in the
// unpooled shape ((in - 1) * stride - pads + kernel per spatial dim); a larger output_shape
// keeps that block at its start and zeros the rest, as ONNX's reference does.
#include <cstring>
#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void MaxUnpool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const Tensor& indices = inputs[1];
  Tensor& y = outputs[0];
  const size_t rank = x.rank(), ns = rank - 2;
  const auto kernel = node.attr_ints("kernel_shape");
  const auto strides = node.attr_ints("strides", std::vector<int64_t>(ns, 1));
  const auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  Dims unpooled = {x.dim(0), x.dim(1)};
  for (size_t d = 0; d < ns; ++d)
    unpooled.push_back((x.dim(static_cast<int64_t>(d) + 2) - 1) * strides[d] - pads[d] - pads[d + ns] + kernel[d]);
  const int64_t limit = numel_of(unpooled);
  const auto from = strides_of(unpooled), to = strides_of(y.dims());
  std::memset(y.raw(), 0, y.nbytes());
  const int64_t* pi = indices.data<int64_t>();
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t at = pi[i];
      if (at < 0 || at >= limit)
        fail(node, "index " + std::to_string(at) + " is outside the unpooled shape " + dims_to_string(unpooled));
      int64_t dst = 0;
      for (size_t d = 0; d < rank; ++d) {
        dst += at / from[d] * to[d];
        at %= from[d];
      }
      py[dst] = px[i];
    }
  });
}

}  // namespace fusor::ref
