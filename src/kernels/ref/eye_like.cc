// EyeLike: a 2-D tensor of the input's shape with ones on the k-th diagonal, zeros elsewhere,
// in the `dtype` attribute's type (the input's when absent).
#include <cstring>

#include "ir/graph.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void EyeLike(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const size_t esize = dtype_size(out.dtype());
  std::vector<std::byte> one(esize);
  if (out.dtype() == DType::Float16 || out.dtype() == DType::BFloat16) {
    const uint16_t bits = out.dtype() == DType::Float16 ? 0x3C00 : 0x3F80;  // 1.0
    std::memcpy(one.data(), &bits, sizeof bits);
  } else {
    visit_dtype(out.dtype(), node, [&](auto* tag) {
      const auto v = static_cast<elem_t<decltype(tag)>>(1);
      std::memcpy(one.data(), &v, sizeof v);
    });
  }
  auto* dst = static_cast<std::byte*>(out.raw());
  if (out.nbytes()) std::memset(dst, 0, out.nbytes());
  const int64_t rows = out.dim(0), cols = out.dim(1), k = node.attr_int("k", 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < cols) std::memcpy(dst + static_cast<size_t>(i * cols + j) * esize, one.data(), esize);
  }
}

}  // namespace fusor::ref
