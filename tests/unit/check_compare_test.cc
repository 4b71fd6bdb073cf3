// The gate's comparison rules: tolerance, ULP bound, non-finite values, worst element.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "check/compare.h"

namespace fusor {
namespace {

Tensor of(std::vector<float> v) {
  Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

TEST(CheckCompare, UlpDistanceIsMonotonicAcrossZero) {
  EXPECT_EQ(ulp_distance(1.0f, 1.0f), 0);
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1);
  EXPECT_EQ(ulp_distance(-0.0f, 0.0f), 0);
  EXPECT_EQ(ulp_distance(std::nextafter(0.0f, -1.0f), std::nextafter(0.0f, 1.0f)), 2);
}

TEST(CheckCompare, StrictToleranceFindsTheWorstElement) {
  Tolerance strict = tolerance_for(PrecisionCheck::Strict);
  Difference same = compare_tensors(of({1, 2, 3}), of({1, 2, 3}), strict);
  EXPECT_TRUE(same.within);
  EXPECT_EQ(same.max_abs, 0);
  Difference near = compare_tensors(of({1.000001f, 2, 3}), of({1, 2, 3}), strict);
  EXPECT_TRUE(near.within) << near.max_abs;
  Difference off = compare_tensors(of({1, 2.001f, 3}), of({1, 2, 3}), strict);
  EXPECT_FALSE(off.within);
  EXPECT_EQ(off.worst_index, 1);
  EXPECT_NEAR(off.max_rel, 0.0005, 1e-5);
  EXPECT_TRUE(compare_tensors(of({1, 2.001f, 3}), of({1, 2, 3}), tolerance_for(PrecisionCheck::Relaxed)).within);
}

TEST(CheckCompare, UlpBoundAppliesAboveAtol) {
  Tolerance t{1e-5, 1.0, 64};  // rtol alone would accept anything
  EXPECT_FALSE(compare_tensors(of({1000.1f}), of({1000.0f}), t).within);
  EXPECT_TRUE(compare_tensors(of({1e-7f}), of({2e-7f}), t).within);  // below atol: ULPs do not count
}

TEST(CheckCompare, NonFiniteOnOneSideAlwaysFails) {
  Tolerance relaxed = tolerance_for(PrecisionCheck::Relaxed);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare_tensors(of({nan, inf}), of({nan, inf}), relaxed).within);
  Difference d = compare_tensors(of({1, nan}), of({1, 2}), relaxed);
  EXPECT_FALSE(d.within);
  EXPECT_TRUE(d.nonfinite_mismatch);
  EXPECT_FALSE(compare_tensors(of({inf}), of({-inf}), relaxed).within);
  EXPECT_TRUE(compare_tensors(of({1, 2}), of({1, 2, 3}), relaxed).shape_mismatch);
}

// A fused QDQ unit's quantized output: one step at a rare tie passes, two steps or a step in
// more than one element of kMaxSteppedPer (a wrong zero point) does not; without the allowance
// integers must be equal.
TEST(CheckCompare, QuantizedOutputsMayBeOneStepOffAtRareTies) {
  auto bytes = [](int64_t n, int at, int delta) {
    Tensor t(DType::UInt8, {n});
    for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(100 + (i == at || at < 0 ? delta : 0));
    return t;
  };
  Tolerance exact = tolerance_for(PrecisionCheck::Strict), one_step = exact;
  one_step.quantization_steps = 1;
  const Tensor want = bytes(1000, 0, 0);
  EXPECT_FALSE(compare_tensors(bytes(1000, 7, 1), want, exact).within);
  Difference d = compare_tensors(bytes(1000, 7, 1), want, one_step);
  EXPECT_TRUE(d.within);
  EXPECT_EQ(d.max_abs, 1.0);
  EXPECT_EQ(d.worst_index, 7);
  EXPECT_FALSE(compare_tensors(bytes(1000, 7, 2), want, one_step).within);   // two steps
  EXPECT_FALSE(compare_tensors(bytes(1000, -1, 1), want, one_step).within);  // every element: no tie
}

}  // namespace
}  // namespace fusor
