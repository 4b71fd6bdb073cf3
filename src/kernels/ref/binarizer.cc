// Binarizer (ai.onnx.ml): 1 where an element is greater than `threshold`, else 0 (NaN gives 0).
#include "ir/graph.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void Binarizer(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const double threshold = node.attr_float("threshold", 0.0f);
  visit_dtype(inputs[0].dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* x = inputs[0].data<T>();
    T* y = outputs[0].data<T>();
    for (int64_t i = 0; i < inputs[0].numel(); ++i) y[i] = static_cast<double>(x[i]) > threshold ? T(1) : T(0);
  });
}

}  // namespace fusor::ref
