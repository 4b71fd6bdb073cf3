// Reference kernels of the broadcasting ops: arithmetic (Add Sub Mul Div Pow Mod PRelu),
// comparisons (Equal Greater Less GreaterOrEqual LessOrEqual), Where and Expand. All run through the one loop in broadcast.h; each op
// is one lambda over a pair of elements.
#include <cmath>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

using ref::elem_t;

// c = f(a, b) for two operands of one numeric dtype; the result has that dtype.
template <class F>
void arithmetic(const Node& node, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  ref::require_dtype(node, in[1], in[0].dtype(), "input 1");
  ref::visit_family<ref::is_numeric_type>(in[0].dtype(), node, "a numeric type", [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    ref::broadcast_map<T, T, T>(out[0], {&in[0], &in[1]}, [&](T a, T b) { return f(a, b); });
  });
}

// c = f(a, b) as bool for two operands of one dtype.
template <class F>
void comparison(const Node& node, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  ref::require_dtype(node, in[1], in[0].dtype(), "input 1");
  ref::visit_dtype(in[0].dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    ref::broadcast_map<bool, T, T>(out[0], {&in[0], &in[1]}, [&](T a, T b) { return f(a, b); });
  });
}

// Integer power by squaring with wraparound; negative exponents truncate 1/x^|e| toward zero.
template <class T>
T int_pow(T base, int64_t e) {
  if (e < 0) {
    if (base == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>)
      if (base == T(-1)) return (e % 2 == 0) ? T(1) : T(-1);
    return T(0);
  }
  T result = T(1);
  while (e > 0) {
    if (e & 1) result = ref::wrap_mul(result, base);
    base = ref::wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

// base ** exponent where the result has the base's type (ONNX Pow, T and T1 may differ).
template <class T, class E>
T power(T base, E exponent) {
  if constexpr (std::is_floating_point_v<T> && std::is_floating_point_v<E>) {
    using C = std::common_type_t<T, E>;  // float32 ** float32 stays in float
    return static_cast<T>(std::pow(static_cast<C>(base), static_cast<C>(exponent)));
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(std::pow(base, static_cast<T>(exponent)));
  } else if constexpr (std::is_floating_point_v<E>) {
    return ref::float_to_int<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  } else {
    return int_pow(base, static_cast<int64_t>(exponent));
  }
}

// a mod b for integers: with fmod, the sign of a (C's %); without, the sign of b (Python's %).
template <class T>
T int_mod(const Node& node, T a, T b, bool fmod) {
  if (b == T(0)) fail(node, "integer modulo by zero");
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);  // INT_MIN % -1 overflows in C
    const T r = static_cast<T>(a % b);
    return !fmod && r != T(0) && ((r < T(0)) != (b < T(0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}

}  // namespace

namespace ref {

void Add(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  arithmetic(n, in, out, [](auto a, auto b) { return wrap_add(a, b); });
}
void Sub(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  arithmetic(n, in, out, [](auto a, auto b) { return wrap_sub(a, b); });
}
void Mul(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  arithmetic(n, in, out, [](auto a, auto b) { return wrap_mul(a, b); });
}
void Div(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  // Integer division truncates toward zero, like C.
  arithmetic(n, in, out, [&](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      if (b == T(0)) fail(n, "integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrap_neg(a);
    }
    return static_cast<T>(a / b);
  });
}

void Pow(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  visit_family<is_numeric_type>(in[0].dtype(), n, "a numeric base", [&](auto* base_tag) {
    using T = elem_t<decltype(base_tag)>;
    visit_family<is_numeric_type>(in[1].dtype(), n, "a numeric exponent", [&](auto* exp_tag) {
      using E = elem_t<decltype(exp_tag)>;
      broadcast_map<T, T, E>(out[0], {&in[0], &in[1]}, [](T a, E b) { return power(a, b); });
    });
  });
}

void Equal(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  comparison(n, in, out, [](auto a, auto b) { return a == b; });
}
void Greater(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  comparison(n, in, out, [](auto a, auto b) { return a > b; });
}
void Less(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  comparison(n, in, out, [](auto a, auto b) { return a < b; });
}

void GreaterOrEqual(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  comparison(n, in, out, [](auto a, auto b) { return a >= b; });
}
void LessOrEqual(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  comparison(n, in, out, [](auto a, auto b) { return a <= b; });
}

// Floats take fmod=1 only (the shape function refuses fmod=0 for them): C's fmod.
void Mod(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const bool fmod = n.attr_int("fmod", 0) != 0;
  arithmetic(n, in, out, [&](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(std::fmod(a, b));
    else return int_mod(n, a, b, fmod);
  });
}

// x < 0 ? slope * x : x, with the slope broadcast to x's shape; NaN stays NaN.
void PRelu(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  arithmetic(n, in, out, [](auto x, auto slope) {
    using T = decltype(x);
    if constexpr (std::is_signed_v<T>) return x < T(0) ? wrap_mul(slope, x) : x;
    else return x;  // unsigned: never below 0
  });
}

void Where(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  require_dtype(n, in[0], DType::Bool, "condition");
  require_dtype(n, in[2], in[1].dtype(), "input 2");
  visit_dtype(in[1].dtype(), n, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    broadcast_map<T, bool, T, T>(out[0], {&in[0], &in[1], &in[2]},
                                 [](bool c, T a, T b) { return c ? a : b; });
  });
}

void Expand(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), n, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    broadcast_map<T, T>(out[0], {&in[0]}, [](T a) { return a; });
  });
}

}  // namespace ref
}  // namespace fusor
