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

// e^x with IEEE behaviour outside Highway's valid range (overflow to +inf, NaN kept).
inline V exp(V x) {
  const D d;
  V y = hn::Exp(d, hn::Min(x, hn::Set(d, 88.72283f)));
  y = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283f)), hn::Set(d, std::numeric_limits<float>::infinity()), y);
  return hn::IfThenElse(hn::Not(hn::Eq(x, x)), x, y);
}

// SiLU x / (1 + e^-x) for the kernels that apply it as an epilogue. The division is a reciprocal
// estimate and one Newton step (within 2 ulp; a divide would bound those kernels), 0 where e^-x
// overflows.
inline V silu(V x) {
  const D d;
  const V den = hn::Add(hn::Set(d, 1.f), exp(hn::Neg(x)));
  V r = hn::ApproximateReciprocal(den);
  r = hn::Mul(r, hn::NegMulAdd(den, r, hn::Set(d, 2.f)));
  return hn::Mul(x, hn::IfThenZeroElse(hn::IsInf(den), r));
}

// erf(x): a rational approximation, max abs error ~1e-7 (see simd.cc).
V erf(V x);

}  // namespace fusor::cpu::simd
