// The vector exp, sigmoid and SiLU (kernels/cpu/simd.h) against double precision: a dense sweep
// of the range where the results are normal floats, and every edge (the ends of the range, the
// overflow and underflow points, +-inf, NaN) where they are not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/simd.h"

namespace fusor {
namespace {

namespace hn = cpu::simd::hn;
using cpu::simd::D;
using cpu::simd::V;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> apply(V (*f)(V), const std::vector<float>& x) {
  const D d;
  const size_t L = hn::Lanes(d);
  std::vector<float> padded(x), y((x.size() + L - 1) / L * L);
  padded.resize(y.size(), 0.f);
  for (size_t i = 0; i < y.size(); i += L) hn::StoreU(f(hn::LoadU(d, padded.data() + i)), d, y.data() + i);
  y.resize(x.size());
  return y;
}

std::vector<float> sweep(float lo, float hi, int n) {
  std::vector<float> x;
  for (int i = 0; i <= n; ++i) x.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n));
  return x;
}

// Relative error in units of float's epsilon, against a double reference.
double ulps(float got, double want) { return std::abs(got - want) / (std::abs(want) * 0x1p-23); }

TEST(SimdMath, ExpIsWithinTwoUlpWhereTheResultIsANormalFloat) {
  const auto x = sweep(-86.6f, 88.7f, 200003);
  const auto y = apply(cpu::simd::exp, x);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_LE(ulps(y[i], std::exp(double{x[i]})), 2.0) << "x = " << x[i];
}

TEST(SimdMath, ExpHasIeeeEnds) {
  const std::vector<float> x = {-kInf, -1000.f, -87.f, 88.8f, 1000.f, kInf, std::nanf(""), 0.f, -0.f, 88.72283f};
  const auto y = apply(cpu::simd::exp, x);
  EXPECT_EQ(y[0], 0.f);
  EXPECT_EQ(y[1], 0.f);
  EXPECT_LE(y[2], 2.4e-38f);  // a subnormal flushed to 0, or its value
  EXPECT_EQ(y[3], kInf);
  EXPECT_EQ(y[4], kInf);
  EXPECT_EQ(y[5], kInf);
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_EQ(y[7], 1.f);
  EXPECT_EQ(y[8], 1.f);
  EXPECT_TRUE(std::isfinite(y[9]));  // just below ln(FLT_MAX): the largest finite result
  EXPECT_LE(ulps(y[9], std::exp(double{x[9]})), 2.0);
}

TEST(SimdMath, SigmoidAndSiluAreWithinFourUlp) {
  const auto x = sweep(-80.f, 80.f, 200003);
  const auto s = apply(cpu::simd::sigmoid, x), u = apply(cpu::simd::silu, x);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = 1.0 / (1.0 + std::exp(-double{x[i]}));
    ASSERT_LE(ulps(s[i], want), 4.0) << "x = " << x[i];
    if (x[i] != 0.f) {
      ASSERT_LE(ulps(u[i], x[i] * want), 4.0) << "x = " << x[i];
    }
  }
}

TEST(SimdMath, SigmoidAndSiluEnds) {
  const std::vector<float> x = {-kInf, -1000.f, -100.f, 100.f, 1000.f, kInf, std::nanf("")};
  const auto s = apply(cpu::simd::sigmoid, x), u = apply(cpu::simd::silu, x);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_LE(s[i], 2.4e-38f) << x[i];  // 0 or a value below float's smallest normal
    EXPECT_GE(s[i], 0.f) << x[i];
  }
  // 1, or 1 - 2^-24 where the reciprocal estimate is AVX2's 12-bit one
  for (size_t i = 3; i < 6; ++i) EXPECT_NEAR(s[i], 1.f, 0x1p-24f) << x[i];
  EXPECT_TRUE(std::isnan(s[6]));
  EXPECT_EQ(u[1], u[1]);                 // -1000 * (< 2.4e-38): tiny, not NaN
  EXPECT_LE(std::abs(u[2]), 1e-30f);     // -100 * sigmoid(-100)
  EXPECT_NEAR(u[3], 100.f, 100.f * 0x1p-23f);
  EXPECT_EQ(u[5], kInf);
  EXPECT_TRUE(std::isnan(u[6]));
  // Past the clamp sigmoid is 0, as ONNX Runtime's: SiLU of -3e38 was -7.05 (x times the clamp's
  // 2.4e-38), and of -inf -inf where -inf * 0 is NaN.
  const std::vector<float> far_x = {-3e38f, -kInf};
  const auto far = apply(cpu::simd::silu, far_x);
  EXPECT_EQ(far[0], 0.f);
  EXPECT_TRUE(std::isnan(far[1]));
}

}  // namespace
}  // namespace fusor
