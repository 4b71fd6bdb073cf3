// Reference Softmax, LogSoftmax and Hardmax. Statistics (max, sum of exponentials) are taken in
// double.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

// The input viewed as [outer, d, inner], normalized along d. Before opset 13 the input is
// coerced to 2D at `axis` (d spans every trailing dim); from 13 only `axis` is normalized.
struct AxisView {
  int64_t outer = 1, d = 1, inner = 1;
};

AxisView axis_view(const Node& node, const Tensor& x) {
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = node.attr_int("axis", node.opset >= 13 ? -1 : 1);
  if (!(node.opset < 13 && axis == rank)) axis = normalize_axis(axis, rank, node);
  AxisView v;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t n = x.dims()[static_cast<size_t>(i)];
    if (i < axis) v.outer *= n;
    else if (i == axis || node.opset < 13) v.d *= n;
    else v.inner *= n;
  }
  return v;
}

// Calls f(src, dst, d, inner) for each lane along the normalized axis: its d values are
// src[i * inner], their results go to dst[i * inner].
template <class F>
void for_each_lane(const Node& node, const Tensor& x, Tensor& y, F&& f) {
  const AxisView v = axis_view(node, x);
  const int64_t outer = v.outer, d = v.d, inner = v.inner;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
#pragma omp parallel for
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) f(in + o * d * inner + j, out + o * d * inner + j, d, inner);
  });
}

void softmax_like(const Node& node, const Tensor& x, Tensor& y, bool log) {
  for_each_lane(node, x, y, [log](const auto* src, auto* dst, int64_t d, int64_t inner) {
    using T = std::remove_pointer_t<decltype(dst)>;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < d; ++i) mx = std::max(mx, static_cast<double>(src[i * inner]));
    double sum = 0;
    for (int64_t i = 0; i < d; ++i) sum += std::exp(static_cast<double>(src[i * inner]) - mx);
    if (log) {
      double lse = std::log(sum);
      for (int64_t i = 0; i < d; ++i) dst[i * inner] = static_cast<T>(static_cast<double>(src[i * inner]) - mx - lse);
    } else {
      double inv = 1.0 / sum;
      for (int64_t i = 0; i < d; ++i)
        dst[i * inner] = static_cast<T>(std::exp(static_cast<double>(src[i * inner]) - mx) * inv);
    }
  });
}

// 1 at the first maximum along the axis (a NaN counts as the maximum), 0 elsewhere.
void hardmax(const Node& node, const Tensor& x, Tensor& y) {
  for_each_lane(node, x, y, [](const auto* src, auto* dst, int64_t d, int64_t inner) {
    using T = std::remove_pointer_t<decltype(dst)>;
    int64_t best = 0;
    for (int64_t i = 1; i < d && !std::isnan(src[best * inner]); ++i)
      if (std::isnan(src[i * inner]) || src[i * inner] > src[best * inner]) best = i;
    for (int64_t i = 0; i < d; ++i) dst[i * inner] = i == best ? T{1} : T{0};
  });
}

}  // namespace

void Softmax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  softmax_like(node, inputs[0], outputs[0], false);
}

void LogSoftmax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  softmax_like(node, inputs[0], outputs[0], true);
}

void Hardmax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  hardmax(node, inputs[0], outputs[0]);
}

}  // namespace fusor::ref
