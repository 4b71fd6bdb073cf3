// Highway helpers for the CPU kernels. Static dispatch: the code is compiled for the build
// machine's ISA (-march=native), so there is one target, HWY_NAMESPACE.
#pragma once
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace fusor::cpu::simd {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

inline size_t lanes() { return hn::Lanes(D()); }

// y[i] = f(x[i]) for i in [0, n); the tail uses masked loads/stores.
template <class F>
inline void map1(const float* x, float* y, int64_t n, F&& f) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(f(hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    hn::BlendedStore(f(hn::MaskedLoad(m, d, x + i)), m, d, y + i);
  }
}

// z[i] = f(a(i), b(i)) where each operand is a contiguous array or a scalar broadcast.
template <bool kAScalar, bool kBScalar, class F>
inline void map2(const float* a, const float* b, float* z, int64_t n, F&& f) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const V as = kAScalar ? hn::Set(d, *a) : hn::Zero(d);
  const V bs = kBScalar ? hn::Set(d, *b) : hn::Zero(d);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V va = kAScalar ? as : hn::LoadU(d, a + i);
    V vb = kBScalar ? bs : hn::LoadU(d, b + i);
    hn::StoreU(f(va, vb), d, z + i);
  }
  if (i < n) {
    auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    V va = kAScalar ? as : hn::MaskedLoad(m, d, a + i);
    V vb = kBScalar ? bs : hn::MaskedLoad(m, d, b + i);
    hn::BlendedStore(f(va, vb), m, d, z + i);
  }
}

// Keeps a loaded vector in a register. In GEMM inner loops GCC otherwise folds a weights vector's
// load into each FMA that uses it, one load per row instead of one (panel_gemm.cc measured its
// loop at ~50 instead of ~95 GFLOP/s).
inline void keep_in_register(V& v) {
#if HWY_ARCH_X86 && defined(__GNUC__)
  asm("" : "+x"(v.raw));
#else
  (void)v;
#endif
}

// Where exp_in_range is valid: ln(2^-125) and ln(FLT_MAX).
inline constexpr float kExpLo = -86.64339f, kExpHi = 88.72283f;

// e^x for x in [kExpLo, kExpHi], nothing checked: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by
// Highway's polynomial (Cephes' coefficients, within 1 ulp), 2^n put straight into the exponent
// bits. About 20 instructions against Highway's Exp's 45 with our range checks around it, which
// made exp the larger part of SiLU epilogues and softmax rows (docs/benchmarks.md).
inline V exp_in_range(V x) {
  const D d;
  const hn::RebindToSigned<D> di;
  // n = round(x / ln 2) by adding 1.5 * 2^23: n lands in t's low mantissa bits, so the scale
  // needs no float-to-int conversion.
  const V magic = hn::Set(d, 12582912.f);
  const V t = hn::MulAdd(x, hn::Set(d, 1.442695040888963407359924681f), magic);
  const V n = hn::Sub(t, magic);
  V r = hn::MulAdd(n, hn::Set(d, -0.693145751953125f), x);
  r = hn::MulAdd(n, hn::Set(d, -1.428606765330187045e-6f), r);
  const V r2 = hn::Mul(r, r);
  const V p01 = hn::MulAdd(hn::Set(d, 0.166666671633720397949219f), r, hn::Set(d, 0.5f));
  const V p23 = hn::MulAdd(hn::Set(d, 0.00833336077630519866943359f), r, hn::Set(d, 0.0416664853692054748535156f));
  const V p45 = hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r, hn::Set(d, 0.00139304355252534151077271f));
  const V poly = hn::MulAdd(hn::MulAdd(p45, r2, p23), r2, p01);
  const V y = hn::Add(hn::MulAdd(poly, r2, r), hn::Set(d, 1.f));
  // 2^(n-1), then times 2: n reaches 128 just below kExpHi, one more than the exponent field holds.
  const V half_scale = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, t), hn::Set(di, 126 - 0x4B400000))));
  return hn::Mul(hn::Mul(y, half_scale), hn::Set(d, 2.f));
}

// e^x with IEEE behaviour at the ends: +inf above ln(FLT_MAX), NaN kept. Below kExpLo the result
// is 0 rather than a subnormal (< 2.4e-38).
inline V exp(V x) {
  const D d;
  const V lo = hn::Set(d, kExpLo), hi = hn::Set(d, kExpHi);
  V y = hn::IfThenZeroElse(hn::Lt(x, lo), exp_in_range(hn::Min(hn::Max(x, lo), hi)));
  y = hn::IfThenElse(hn::Gt(x, hi), hn::Set(d, std::numeric_limits<float>::infinity()), y);
  return hn::IfThenElse(hn::Not(hn::Eq(x, x)), x, y);
}

// 1 / (1 + e^-x). e^-x's argument is clamped to +-kExpLo: beyond it the result is 1 in float on
// one side and below 2.4e-38 on the other, where it is 0 (the clamp's 2.4e-38 made SiLU of
// -3e38 -7.05, not -0, and of -inf -inf, not NaN). The division is a reciprocal estimate and one
// Newton step (within 2 ulp; a divide would bound the kernels that apply it as an epilogue). NaN
// stays NaN.
inline V sigmoid(V x) {
  const D d;
  const V lo = hn::Set(d, kExpLo);
  const V den = hn::Add(hn::Set(d, 1.f), exp_in_range(hn::Min(hn::Max(hn::Neg(x), lo), hn::Neg(lo))));
  V r = hn::ApproximateReciprocal(den);
  r = hn::IfThenZeroElse(hn::Lt(x, lo), hn::Mul(r, hn::NegMulAdd(den, r, hn::Set(d, 2.f))));
  return hn::IfThenElse(hn::Not(hn::Eq(x, x)), x, r);
}

// SiLU x * sigmoid(x), for the kernels that apply it as an epilogue.
inline V silu(V x) { return hn::Mul(x, sigmoid(x)); }

// erf(x): a rational approximation on [-4, 4] (outside, erf is +/-1 in float), x * P(x^2) /
// Q(x^2) with the coefficients of Eigen's generic_fast_erf_float; max abs error ~1e-7, several
// times faster than SLEEF's 1-ULP erff on AVX2. Inline, so that a block of independent vectors
// interleaves (GemmEpilogue::apply_block). The divide stays a divide: a reciprocal and one
// Newton step moved GELU by an ulp, enough to flip a DynamicQuantizeLinear step downstream in
// MiniLM-int8 (tests/e2e/test_quantized_fusion.py). NaN stays NaN. The quotient is clamped to
// [-1, 1]: near +/-4 it reached 1.0000002, and sqrt(1 - erf(x)) was NaN.
inline V erf(V a) {
  const D d;
  const V x = hn::Min(hn::Max(a, hn::Set(d, -4.f)), hn::Set(d, 4.f));
  const V x2 = hn::Mul(x, x);
  V p = hn::MulAdd(x2, hn::Set(d, -2.72614225801306e-10f), hn::Set(d, 2.77068142495902e-08f));
  p = hn::MulAdd(x2, p, hn::Set(d, -2.10102402082508e-06f));
  p = hn::MulAdd(x2, p, hn::Set(d, -5.69250639462346e-05f));
  p = hn::MulAdd(x2, p, hn::Set(d, -7.34990630326855e-04f));
  p = hn::MulAdd(x2, p, hn::Set(d, -2.95459980854025e-03f));
  p = hn::MulAdd(x2, p, hn::Set(d, -1.60960333262415e-02f));
  p = hn::Mul(x, p);
  V q = hn::MulAdd(x2, hn::Set(d, -1.45660718464996e-05f), hn::Set(d, -2.13374055278905e-04f));
  q = hn::MulAdd(x2, q, hn::Set(d, -1.68282697438203e-03f));
  q = hn::MulAdd(x2, q, hn::Set(d, -7.37332916720468e-03f));
  q = hn::MulAdd(x2, q, hn::Set(d, -1.42647390514189e-02f));
  const V one = hn::Set(d, 1.f);
  return hn::IfThenElse(hn::Not(hn::Eq(a, a)), a, hn::Min(hn::Max(hn::Div(p, q), hn::Neg(one)), one));
}

}  // namespace fusor::cpu::simd
