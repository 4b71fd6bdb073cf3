// Helpers shared by the elementwise reference kernels: dtype dispatch restricted to a family of
// element types, integer arithmetic that wraps like numpy (never signed-overflow UB), float to
// integer conversion that truncates toward zero, and a same-shape unary map.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"

namespace fusor::ref {

template <class T> struct is_float_type : std::bool_constant<std::is_floating_point_v<T>> {};
template <class T> struct is_signed_type : std::bool_constant<std::is_signed_v<T>> {};
template <class T> struct is_numeric_type : std::bool_constant<!std::is_same_v<T, bool>> {};
template <class T> struct is_any_type : std::true_type {};

// visit_dtype restricted to the element types for which Accept<T> holds; any other dtype
// throws "<node>: unsupported dtype X (expects <expects>)".
template <template <class> class Accept, class F>
void visit_family(DType t, const Node& node, const char* expects, F&& f) {
  visit_dtype(t, node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (Accept<T>::value) f(tag);
    else fail(node, std::string("unsupported dtype ") + dtype_name(t) + " (expects " + expects + ")");
  });
}

inline void require_dtype(const Node& node, const Tensor& t, DType expected, const char* what) {
  if (t.dtype() != expected)
    fail(node, std::string(what) + " has dtype " + dtype_name(t.dtype()) + ", expected " + dtype_name(expected));
}

// Integer +, -, *, negation with two's-complement wraparound (numpy semantics).
template <class T> T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) + static_cast<std::make_unsigned_t<T>>(b));
  else return static_cast<T>(a + b);
}
template <class T> T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) - static_cast<std::make_unsigned_t<T>>(b));
  else return static_cast<T>(a - b);
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) * static_cast<std::make_unsigned_t<T>>(b));
  else return static_cast<T>(a * b);
}
template <class T> T wrap_neg(T a) { return wrap_sub(T(0), a); }

// Float to integer like numpy's astype on x86: truncate toward zero, wrap into narrower types;
// NaN and values outside int64 give int64's minimum (then wrapped). uint64 holds [2^63, 2^64)
// too, as numpy and ONNX Runtime convert it (through int64 1.2e19 came out as 2^63).
template <class To, class From> To float_to_int(From x) {
  constexpr double lim = 9223372036854775808.0;  // 2^63
  if constexpr (std::is_same_v<To, uint64_t>)
    if (x >= lim && x < 2 * lim) return static_cast<uint64_t>(x);
  if (!(x >= -lim && x < lim)) return static_cast<To>(std::numeric_limits<int64_t>::min());
  return static_cast<To>(static_cast<int64_t>(x));
}

// y[i] = f(x[i]) over tensors of one shape; T is the input type, O the output type.
template <class T, class O = T, class F>
void map_unary(const Tensor& in, const Tensor& out, F&& f) {
  const T* x = in.data<T>();
  O* y = out.data<O>();
  const int64_t n = in.numel();
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<O>(f(x[i]));
}

}  // namespace fusor::ref
