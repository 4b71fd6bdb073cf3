// Reference Softmax and LogSoftmax. Statistics (max, sum of exponentials) are taken in double.
#include <cmath>
#include <limits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

// Views the input as [outer, d, inner] and normalizes along d. Before opset 13 the input is
// coerced to 2D at `axis` (d spans every trailing dim); from 13 only `axis` is normalized.
void softmax_like(const Node& node, const Tensor& x, Tensor& y, bool log) {
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = node.attr_int("axis", node.opset >= 13 ? -1 : 1);
  if (!(node.opset < 13 && axis == rank)) axis = normalize_axis(axis, rank, node);
  const Dims& dims = x.dims();
  int64_t outer = 1, d = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t v = dims[static_cast<size_t>(i)];
    if (i < axis) outer *= v;
    else if (i == axis || node.opset < 13) d *= v;
    else inner *= v;
  }
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
#pragma omp parallel for
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        const T* src = in + o * d * inner + j;
        T* dst = out + o * d * inner + j;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < d; ++i) mx = std::max(mx, static_cast<double>(src[i * inner]));
        double sum = 0;
        for (int64_t i = 0; i < d; ++i) sum += std::exp(static_cast<double>(src[i * inner]) - mx);
        if (log) {
          double lse = std::log(sum);
          for (int64_t i = 0; i < d; ++i)
            dst[i * inner] = static_cast<T>(static_cast<double>(src[i * inner]) - mx - lse);
        } else {
          double inv = 1.0 / sum;
          for (int64_t i = 0; i < d; ++i)
            dst[i * inner] = static_cast<T>(std::exp(static_cast<double>(src[i * inner]) - mx) * inv);
        }
      }
    }
  });
}

}  // namespace

void Softmax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  softmax_like(node, inputs[0], outputs[0], false);
}

void LogSoftmax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  softmax_like(node, inputs[0], outputs[0], true);
}

}  // namespace fusor::ref
