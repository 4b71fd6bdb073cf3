// The float32 SIMD functor of every row of the elementwise table (ir/elementwise_table.h), shared
// by the unary kernels (unary.cc) and the fused elementwise programs
// (fused_elementwise_program.cc): one definition of each formula, so a fused kernel computes
// exactly what the standalone kernel does. Each functor keeps NaN as NaN (Highway's Ne is an
// ordered compare, so a NaN test is written !(x == x)) and stays finite where the op is.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/elementwise.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu::unary_ops {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// A node's parameters as the functors read them: UnaryParams with Clip's missing bounds at
// -inf and +inf. (The fused programs' PowConst keeps its exponent in alpha.)
struct Params {
  float alpha = 0, beta = 0, gamma = 0, bias = 0, lambd = 0, lo = 0, hi = 0;
  int variant = 0;
};

inline Params simd_params(const UnaryParams& u) {
  const double inf = std::numeric_limits<double>::infinity();
  return {u.alpha, u.beta, u.gamma, u.bias, u.lambd, static_cast<float>(u.lo.value_or(-inf)),
          static_cast<float>(u.hi.value_or(inf)), u.variant};
}

// Highway's approximations hold on a range (sin within +-39000, sinh within +-88.7, asin on
// [-1, 1]). Lanes where `outside` holds (beyond it, inf, NaN) take the scalar function, which
// is the reference's: rare inputs cost a slow vector, never a wrong value.
template <class F>
HWY_INLINE V beyond_range(V x, V y, hn::Mask<D> outside, F scalar) {
  const D d;
  if (HWY_LIKELY(hn::AllFalse(d, outside))) return y;
  alignas(64) float lanes[64];  // room for the widest vector Highway has (2048 bits)
  hn::StoreU(x, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = scalar(lanes[i]);
  return hn::IfThenElse(outside, hn::LoadU(d, lanes), y);
}

// Lanes with |x| > limit, or NaN.
HWY_INLINE hn::Mask<D> abs_above(V x, float limit) {
  const D d;
  return hn::Not(hn::Le(hn::Abs(x), hn::Set(d, limit)));
}

// y within [-1, 1]; NaN stays NaN.
HWY_INLINE V unit_range(V y) {
  const D d;
  const V one = hn::Set(d, 1.f);
  return hn::IfThenElse(hn::Eq(y, y), hn::Min(hn::Max(y, hn::Neg(one)), one), y);
}

#define FUSOR_UNARY(Name, expr)                                            \
  struct Name##Op {                                                        \
    static HWY_INLINE V apply(V x, const Params& p) {                      \
      const D d;                                                           \
      (void)d;                                                             \
      (void)p;                                                             \
      return expr;                                                         \
    }                                                                      \
  };

// min(max(v, lo), hi) with NaN kept: x86's max and min answer their second operand for NaN, which
// turned a NaN into lo (ONNX Runtime and the reference keep it).
HWY_INLINE V clamp_keeping_nan(V v, V lo, V hi) { return hn::IfThenElse(hn::Eq(v, v), hn::Min(hn::Max(v, lo), hi), v); }

FUSOR_UNARY(Relu, hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x))  // not Max: x86 max gives 0 for NaN
FUSOR_UNARY(Neg, hn::Neg(x))
FUSOR_UNARY(Abs, hn::Abs(x))
FUSOR_UNARY(Sqrt, hn::Sqrt(x))
FUSOR_UNARY(Reciprocal, hn::Div(hn::Set(d, 1.f), x))
FUSOR_UNARY(Exp, simd::exp(x))
FUSOR_UNARY(Sigmoid, simd::sigmoid(x))
FUSOR_UNARY(Tanh, hn::Tanh(d, x))
FUSOR_UNARY(Erf, simd::erf(x))
FUSOR_UNARY(Clip, clamp_keeping_nan(x, hn::Set(d, p.lo), hn::Set(d, p.hi)))
FUSOR_UNARY(LeakyRelu, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(x, hn::Set(d, p.alpha)), x))
FUSOR_UNARY(HardSigmoid,
            clamp_keeping_nan(hn::MulAdd(x, hn::Set(d, p.alpha), hn::Set(d, p.beta)), hn::Zero(d), hn::Set(d, 1.f)))
FUSOR_UNARY(HardSwish,
            hn::Mul(x, hn::Min(hn::Max(hn::MulAdd(x, hn::Set(d, 1.f / 6.f), hn::Set(d, 0.5f)),
                                       hn::Zero(d)),
                               hn::Set(d, 1.f))))
FUSOR_UNARY(GeluErf,
            hn::Mul(hn::Mul(x, hn::Set(d, 0.5f)),
                    hn::Add(hn::Set(d, 1.f), simd::erf(hn::Mul(x, hn::Set(d, 0.70710678118654752f))))))
FUSOR_UNARY(GeluTanh,
            hn::Mul(hn::Mul(x, hn::Set(d, 0.5f)),
                    hn::Add(hn::Set(d, 1.f),
                            hn::Tanh(d, hn::Mul(hn::Set(d, 0.7978845608028654f),
                                                hn::MulAdd(hn::Mul(hn::Mul(x, x), x),
                                                           hn::Set(d, 0.044715f), x))))))

// Log with IEEE edge cases: log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf.
struct LogOp {
  static HWY_INLINE V apply(V x, const Params&) {
    const D d;
    const float inf = std::numeric_limits<float>::infinity();
    V y = hn::Log(d, x);
    y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Set(d, -inf), y);
    y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, std::numeric_limits<float>::quiet_NaN()), y);
    y = hn::IfThenElse(hn::Eq(x, hn::Set(d, inf)), x, y);
    return hn::IfThenElse(hn::Not(hn::Eq(x, x)), x, y);
  }
};

// log(1 + e^x) as max(x, 0) + log1p(e^-|x|): e^-|x| is in (0, 1], so nothing overflows and
// small results keep their precision; +inf gives +inf.
struct SoftplusOp {
  static HWY_INLINE V apply(V x, const Params&) {
    const D d;
    const V y = hn::Add(hn::Max(x, hn::Zero(d)), hn::Log1p(d, hn::Exp(d, hn::Neg(hn::Abs(x)))));
    return hn::IfThenElse(hn::Not(hn::Eq(x, x)), x, y);
  }
};

// x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2): one exp and a division. From
// x = 20 on n / (n + 2) is 1 in float, so the exp's argument is clamped there and never
// overflows; a NaN stays NaN through the product.
struct MishOp {
  static HWY_INLINE V apply(V x, const Params&) {
    const D d;
    const V e = hn::Exp(d, hn::Min(x, hn::Set(d, 20.f)));
    const V n = hn::Mul(e, hn::Add(e, hn::Set(d, 2.f)));
    return hn::Mul(x, hn::Div(n, hn::Add(n, hn::Set(d, 2.f))));
  }
};

// x < 0 ? alpha * (e^x - 1) : x, with Highway's expm1 (-1 below its range, so -alpha at -inf).
struct EluOp {
  static HWY_INLINE V apply(V x, const Params& p) {
    const D d;
    return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(hn::Expm1(d, x), hn::Set(d, p.alpha)), x);
  }
};

FUSOR_UNARY(Floor, hn::Floor(x))
FUSOR_UNARY(Ceil, hn::Ceil(x))
FUSOR_UNARY(Round, hn::Round(x))  // halves to even
FUSOR_UNARY(Sign, hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Set(d, 1.f),
                                 hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, -1.f), x)))
// Highway's sine and cosine reach 1.0000001 at times: clamped to [-1, 1], so Asin(Sin(x)) is
// never NaN.
FUSOR_UNARY(Sin, beyond_range(x, unit_range(hn::Sin(d, x)), abs_above(x, 39000.f), [](float v) { return std::sin(v); }))
FUSOR_UNARY(Cos, beyond_range(x, unit_range(hn::Cos(d, x)), abs_above(x, 39000.f), [](float v) { return std::cos(v); }))
FUSOR_UNARY(Tan, beyond_range(x, hn::Div(hn::Sin(d, x), hn::Cos(d, x)), abs_above(x, 39000.f),
                              [](float v) { return std::tan(v); }))
FUSOR_UNARY(Asin, beyond_range(x, hn::Asin(d, x), abs_above(x, 1.f), [](float v) { return std::asin(v); }))
FUSOR_UNARY(Acos, beyond_range(x, hn::Acos(d, x), abs_above(x, 1.f), [](float v) { return std::acos(v); }))
FUSOR_UNARY(Atan, beyond_range(x, hn::Atan(d, x), abs_above(x, std::numeric_limits<float>::max()),
                               [](float v) { return std::atan(v); }))
FUSOR_UNARY(Sinh, beyond_range(x, hn::Sinh(d, x), abs_above(x, 88.72f), [](float v) { return std::sinh(v); }))
// (e^|x| + e^-|x|) / 2, exact enough where e^|x| does not overflow; past that cosh is up to 89.4
// still finite, which the scalar path gives.
FUSOR_UNARY(Cosh, beyond_range(x,
                               hn::Mul(hn::Set(d, 0.5f), hn::Add(hn::Exp(d, hn::Abs(x)),
                                                                hn::Div(hn::Set(d, 1.f), hn::Exp(d, hn::Abs(x))))),
                               abs_above(x, 88.72f), [](float v) { return std::cosh(v); }))
FUSOR_UNARY(Asinh, beyond_range(x, hn::Asinh(d, x), abs_above(x, std::numeric_limits<float>::max()),
                                [](float v) { return std::asinh(v); }))
FUSOR_UNARY(Acosh, beyond_range(x, hn::Acosh(d, x),
                                hn::Not(hn::And(hn::Ge(x, hn::Set(d, 1.f)),
                                                hn::Le(x, hn::Set(d, std::numeric_limits<float>::max())))),
                                [](float v) { return std::acosh(v); }))
FUSOR_UNARY(Atanh, beyond_range(x, hn::Atanh(d, x), hn::Not(hn::Lt(hn::Abs(x), hn::Set(d, 1.f))),
                                [](float v) { return std::atanh(v); }))
// NaN fails x <= 0 and takes gamma * x, so it stays NaN.
FUSOR_UNARY(Selu, hn::IfThenElse(hn::Le(x, hn::Zero(d)), hn::Mul(hn::Expm1(d, x), hn::Set(d, p.gamma * p.alpha)),
                                 hn::Mul(x, hn::Set(d, p.gamma))))
FUSOR_UNARY(Celu, hn::IfThenElse(hn::Le(x, hn::Zero(d)),
                                 hn::Mul(hn::Expm1(d, hn::Div(x, hn::Set(d, p.alpha))), hn::Set(d, p.alpha)), x))
FUSOR_UNARY(Softsign, hn::IfThenElse(hn::IsInf(x), hn::CopySign(hn::Set(d, 1.f), x),
                                     hn::Div(x, hn::Add(hn::Set(d, 1.f), hn::Abs(x)))))
// x above alpha, else 0 (NaN is not above: 0, as the spec and ONNX Runtime).
FUSOR_UNARY(ThresholdedRelu, hn::IfThenElseZero(hn::Gt(x, hn::Set(d, p.alpha)), x))
// x + bias below -lambd, x - bias above lambd, else 0 (NaN too, as the spec and ONNX Runtime).
FUSOR_UNARY(Shrink, hn::IfThenElse(hn::Lt(x, hn::Set(d, -p.lambd)), hn::Add(x, hn::Set(d, p.bias)),
                                   hn::IfThenElseZero(hn::Gt(x, hn::Set(d, p.lambd)), hn::Sub(x, hn::Set(d, p.bias)))))

#undef FUSOR_UNARY

// An op with several formulas (Gelu: erf, tanh) lists one functor per UnaryParams::variant.
struct VariantList {};
template <class... Fs>
struct Variants : VariantList {
  template <class R, class Visit>
  static R pick(int variant, Visit& visit) {
    R out{};
    int i = 0;
    ((i++ == variant ? void(out = visit.template operator()<Fs>()) : void()), ...);
    return out;
  }
};
struct GeluOp : Variants<GeluErfOp, GeluTanhOp> {};

template <class F, class R, class Visit>
R visit_functor(int variant, Visit& visit) {
  if constexpr (std::is_base_of_v<VariantList, F>) return F::template pick<R>(variant, visit);
  else return visit.template operator()<F>();
}

// Returns visit.template operator()<F>() for the functor F of table op `op` and `variant`, or
// R{} when `op` is not in the table.
template <class R, class Visit>
R with_functor(Op op, int variant, Visit&& visit) {
  switch (op) {
#define FUSOR_UNARY_CASE_(name, ...) \
  case Op::name: return visit_functor<name##Op, R>(variant, visit);
    FUSOR_UNARY_OPS(FUSOR_UNARY_CASE_)
#undef FUSOR_UNARY_CASE_
    default: return R{};
  }
}

}  // namespace fusor::cpu::unary_ops
