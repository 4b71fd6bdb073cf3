// Reference kernels of the variadic broadcasting ops Min, Max, Sum and Mean: the result starts
// as input 0 broadcast to the output's shape, and each further input is folded into it in
// order, as the spec's reference does (so float sums round the same way).
#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

using ref::elem_t;

// out = f(...f(f(in0, in1), in2)..., in_last) over numeric operands of one dtype.
template <class F>
void fold(const Node& node, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  if (in.empty()) fail(node, "expects at least 1 input, got 0");
  for (size_t k = 1; k < in.size(); ++k)
    ref::require_dtype(node, in[k], in[0].dtype(), ("input " + std::to_string(k)).c_str());
  ref::visit_family<ref::is_numeric_type>(in[0].dtype(), node, "a numeric type", [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    ref::broadcast_map<T, T>(out[0], {&in[0]}, [](T a) { return a; });
    for (size_t k = 1; k < in.size(); ++k)
      ref::broadcast_map<T, T, T>(out[0], {&out[0], &in[k]}, [&](T a, T b) { return f(a, b); });
  });
}

// NaN wins, as in numpy's minimum and maximum.
template <class T>
bool either_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(a) || std::isnan(b);
  else return false;
}

}  // namespace

namespace ref {

void Min(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  fold(n, in, out, [](auto a, auto b) { return either_nan(a, b) ? a + b : (b < a ? b : a); });
}
void Max(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  fold(n, in, out, [](auto a, auto b) { return either_nan(a, b) ? a + b : (b > a ? b : a); });
}
void Sum(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  fold(n, in, out, [](auto a, auto b) { return wrap_add(a, b); });
}

void Mean(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  Sum(n, in, out);
  visit_float(out[0].dtype(), n, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    T* y = out[0].data<T>();
    const T count = static_cast<T>(in.size());
    for (int64_t i = 0; i < out[0].numel(); ++i) y[i] /= count;
  });
}

}  // namespace ref
}  // namespace fusor
