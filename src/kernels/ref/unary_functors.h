// The scalar functor of every row of the elementwise table (ir/elementwise_table.h): the spec's
// formula, written once as a template over the element type T (float32 is computed in float).
// ref/unary.cc runs them as the reference kernels. Where the spec's formula overflows or cancels
// in floating point, the functor computes the same function the accurate way.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "ir/elementwise.h"
#include "kernels/ref/elementwise.h"

namespace fusor::ref::unary_fn {

#define FUSOR_SCALAR(Name, expr)                                 \
  struct Name {                                                  \
    template <class T>                                           \
    static T apply(T x, const UnaryParams& p) {                  \
      (void)p;                                                   \
      return static_cast<T>(expr);                               \
    }                                                            \
  };

FUSOR_SCALAR(Sqrt, std::sqrt(x))
FUSOR_SCALAR(Reciprocal, T(1) / x)
FUSOR_SCALAR(Erf, std::erf(x))
FUSOR_SCALAR(Tanh, std::tanh(x))
FUSOR_SCALAR(Exp, std::exp(x))
FUSOR_SCALAR(Log, std::log(x))
FUSOR_SCALAR(Neg, wrap_neg(x))
FUSOR_SCALAR(Relu, x < T(0) ? T(0) : x)  // NaN stays NaN, like numpy's maximum(x, 0)
FUSOR_SCALAR(Sigmoid, T(1) / (T(1) + std::exp(-x)))
// Clamped to [0, 1] by comparisons that are false for NaN, so NaN stays NaN (std::min(1, NaN)
// is 1: HardSigmoid(NaN) was 1).
template <class T>
T clamp_unit_keeping_nan(T v) {
  return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
}
FUSOR_SCALAR(HardSigmoid, clamp_unit_keeping_nan(T(p.alpha) * x + T(p.beta)))
FUSOR_SCALAR(HardSwish, x * clamp_unit_keeping_nan(x / T(6) + T(0.5)))
FUSOR_SCALAR(LeakyRelu, x < T(0) ? T(p.alpha) * x : x)
// log(exp(x) + 1) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x, no loss for small.
FUSOR_SCALAR(Softplus, x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
FUSOR_SCALAR(Mish, x * std::tanh(Softplus::apply(x, p)))
// alpha * (exp(x) - 1) below 0, with expm1: exact near 0 where exp(x) - 1 cancels.
FUSOR_SCALAR(Elu, x < T(0) ? T(p.alpha) * std::expm1(x) : x)
FUSOR_SCALAR(Floor, std::floor(x))
FUSOR_SCALAR(Ceil, std::ceil(x))
FUSOR_SCALAR(Round, std::nearbyint(x))  // halves to even, in the default rounding mode
FUSOR_SCALAR(Sin, std::sin(x))
FUSOR_SCALAR(Cos, std::cos(x))
FUSOR_SCALAR(Tan, std::tan(x))
FUSOR_SCALAR(Asin, std::asin(x))
FUSOR_SCALAR(Acos, std::acos(x))
FUSOR_SCALAR(Atan, std::atan(x))
FUSOR_SCALAR(Sinh, std::sinh(x))
FUSOR_SCALAR(Cosh, std::cosh(x))
FUSOR_SCALAR(Asinh, std::asinh(x))
FUSOR_SCALAR(Acosh, std::acosh(x))
FUSOR_SCALAR(Atanh, std::atanh(x))
// gamma * (alpha * e^x - alpha) up to 0, gamma * x above; NaN falls to expm1, which keeps it.
FUSOR_SCALAR(Selu, x > T(0) ? T(p.gamma) * x : T(p.gamma) * T(p.alpha) * std::expm1(x))
// max(0, x) + min(0, alpha * (e^(x/alpha) - 1)), which is one branch or the other.
FUSOR_SCALAR(Celu, x > T(0) ? x : T(p.alpha) * std::expm1(x / T(p.alpha)))
// x / (1 + |x|), whose limit at +-inf is +-1 (the formula itself gives inf/inf).
FUSOR_SCALAR(Softsign, std::isinf(x) ? std::copysign(T(1), x) : x / (T(1) + std::abs(x)))
// The spec's "x for x > alpha, 0 otherwise": NaN is not above alpha, so 0 (as ONNX Runtime).
FUSOR_SCALAR(ThresholdedRelu, x > T(p.alpha) ? x : T(0))

// 1 above 0, -1 below, 0 at 0; NaN stays NaN. Unsigned types are never below 0.
struct Sign {
  template <class T>
  static T apply(T x, const UnaryParams&) {
    if (x > T(0)) return T(1);
    if constexpr (std::is_signed_v<T>)
      if (x < T(0)) return T(-1);
    return x;
  }
};

// x + bias below -lambd, x - bias above lambd, 0 otherwise (NaN too, as the spec's "otherwise"
// and ONNX Runtime have it). Computed in double,
// where a float32 sum rounds once as in float; integer results truncate like numpy's astype.
struct Shrink {
  template <class T>
  static T apply(T x, const UnaryParams& p) {
    const double v = static_cast<double>(x), lambd = p.lambd, bias = p.bias;
    const double y = v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(y);
    else return float_to_int<T>(y);
  }
};

struct Abs {
  template <class T>
  static T apply(T x, const UnaryParams&) {
    if constexpr (std::is_signed_v<T>) return x < T(0) ? wrap_neg(x) : x;
    else return x;
  }
};

// Variant 0: x/2 * (1 + erf(x / sqrt 2)); variant 1: the tanh approximation.
struct Gelu {
  template <class T>
  static T apply(T x, const UnaryParams& p) {
    if (p.variant == 1) {
      const T k = std::sqrt(T(2) / std::numbers::pi_v<T>);
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>));
  }
};

// min(max(x, lo), hi) like numpy.clip: NaN stays NaN and lo > hi gives hi. A missing bound is
// the type's lowest or highest value.
struct Clip {
  template <class T>
  static T apply(T x, const UnaryParams& p) {
    const T lo = p.lo ? static_cast<T>(*p.lo) : std::numeric_limits<T>::lowest();
    const T hi = p.hi ? static_cast<T>(*p.hi) : std::numeric_limits<T>::max();
    return std::min(std::max(x, lo), hi);
  }
};

#undef FUSOR_SCALAR

}  // namespace fusor::ref::unary_fn
