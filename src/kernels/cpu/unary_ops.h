// The float32 elementwise formulas shared by the unary kernels (unary.cc) and the fused
// elementwise programs (fused_elementwise_program.cc): one definition of each activation, so a
// fused kernel computes exactly what the standalone kernel does.
#pragma once
#include <limits>

#include "kernels/cpu/simd.h"

namespace fusor::cpu::unary_ops {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// Attributes of the parametrised ops (LeakyRelu alpha, HardSigmoid alpha/beta, Clip bounds).
struct Params {
  float alpha = 0, beta = 0, lo = 0, hi = 0;
};

#define FUSOR_UNARY(Name, expr)                                            \
  struct Name##Op {                                                        \
    static HWY_INLINE V apply(V x, const Params& p) {                      \
      const D d;                                                           \
      (void)d;                                                             \
      (void)p;                                                             \
      return expr;                                                         \
    }                                                                      \
  };

FUSOR_UNARY(Relu, hn::Max(x, hn::Zero(d)))
FUSOR_UNARY(Neg, hn::Neg(x))
FUSOR_UNARY(Abs, hn::Abs(x))
FUSOR_UNARY(Sqrt, hn::Sqrt(x))
FUSOR_UNARY(Reciprocal, hn::Div(hn::Set(d, 1.f), x))
FUSOR_UNARY(Exp, simd::exp(x))
FUSOR_UNARY(Sigmoid, hn::Div(hn::Set(d, 1.f), hn::Add(hn::Set(d, 1.f), simd::exp(hn::Neg(x)))))
FUSOR_UNARY(Tanh, hn::Tanh(d, x))
FUSOR_UNARY(Erf, simd::erf(x))
FUSOR_UNARY(Clip, hn::Min(hn::Max(x, hn::Set(d, p.lo)), hn::Set(d, p.hi)))
FUSOR_UNARY(LeakyRelu, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(x, hn::Set(d, p.alpha)), x))
FUSOR_UNARY(HardSigmoid,
            hn::Min(hn::Max(hn::MulAdd(x, hn::Set(d, p.alpha), hn::Set(d, p.beta)), hn::Zero(d)),
                    hn::Set(d, 1.f)))
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
#undef FUSOR_UNARY

}  // namespace fusor::cpu::unary_ops
