// Ops that make tensors from shapes and scalars: Shape, ConstantOfShape, Range.
#include <algorithm>
#include <cstring>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

// Needs only the input's dims: at plan time the input may be a data-less view with its bound dims.
void Shape(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  if (!in.defined()) fail(node, "Shape received no input type (its input tensor is undefined)");
  const int64_t rank = static_cast<int64_t>(in.rank());
  auto clip = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = 0, end = rank;
  if (node.opset >= 15) {
    start = clip(node.attr_int("start", 0));
    if (node.has_attr("end")) end = clip(node.attr_int("end", rank));
  }
  int64_t* out = outputs[0].data<int64_t>();
  for (int64_t d = start; d < end; ++d) *out++ = in.dims()[static_cast<size_t>(d)];
}

void ConstantOfShape(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const Tensor* value = node.attr_tensor("value");
  if (!value) return;  // default: float32 zeros, and outputs arrive zero-filled
  const size_t esize = dtype_size(out.dtype());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + static_cast<size_t>(i) * esize, value->raw(), esize);
}

void Range(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  visit_dtype(outputs[0].dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>) {
      fail(node, "Range does not support bool");
    } else {
      const T start = inputs[0].data<T>()[0];
      const T delta = inputs[2].data<T>()[0];
      T* out = outputs[0].data<T>();
      for (int64_t i = 0; i < outputs[0].numel(); ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
  });
}

}  // namespace fusor::ref
