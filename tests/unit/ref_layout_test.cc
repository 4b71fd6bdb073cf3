// Layout ops (group B): shape function + reference kernel on small hand-checkable cases.
#include <gtest/gtest.h>

#include <cstring>

#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

TEST(RefLayout, ReshapeCopiesZeroAndInfersMinusOne) {
  Tensor x = make<float>({2, 3, 4}, iota_f(24));
  auto out = run(make_node("Reshape", 14), {x, ints({0, -1})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 12}));
  EXPECT_EQ(values<float>(out[0]), iota_f(24));
  // allowzero=1: 0 is a real zero-size dim.
  Tensor empty = make<float>({0, 3}, {});
  out = run(make_node("Reshape", 14, {{"allowzero", int64_t{1}}}), {empty, ints({3, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 0}));
}

TEST(RefLayout, ReshapeToIncompatibleSizeFails) {
  Tensor x = make<float>({2, 3}, iota_f(6));
  EXPECT_THROW(run(make_node("Reshape", 13), {x, ints({4, 2})}), Error);
  EXPECT_THROW(run(make_node("Reshape", 13), {x, ints({4, -1})}), Error);
}

TEST(RefLayout, SliceNegativeStepAndClamping) {
  Tensor x = make<int32_t>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Axis 1 from the end backwards, every second element; axis 0 clamped from INT64_MIN.
  auto out = run(make_node("Slice", 13),
                 {x, ints({INT64_MIN, -1}), ints({INT64_MAX, INT64_MIN}), ints({0, 1}), ints({1, -2})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{3, 1, 7, 5}));
  // Opset 1: attributes, no steps.
  out = run(make_node("Slice", 1, {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{100}},
                                   {"axes", std::vector<int64_t>{-1}}}),
            {x});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{1, 2, 3, 5, 6, 7}));
}

TEST(RefLayout, GatherNegativeIndices) {
  Tensor x = make<float>({3, 2}, iota_f(6));
  auto out = run(make_node("Gather", 13), {x, make<int32_t>({2}, {-1, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{4, 5, 0, 1}));
  out = run(make_node("Gather", 13, {{"axis", int64_t{1}}}), {x, make<int64_t>({}, {-1})});
  EXPECT_EQ(out[0].dims(), (Dims{3}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 3, 5}));
  EXPECT_THROW(run(make_node("Gather", 13), {x, make<int64_t>({1}, {3})}), Error);
}

TEST(RefLayout, UnsqueezeAxesAttributeBefore13InputFrom13) {
  Tensor x = make<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto a = run(make_node("Unsqueeze", 11, {{"axes", std::vector<int64_t>{0, -1}}}), {x});
  EXPECT_EQ(a[0].dims(), (Dims{1, 2, 3, 1}));
  auto b = run(make_node("Unsqueeze", 13), {x, ints({0, -1})});
  EXPECT_EQ(b[0].dims(), (Dims{1, 2, 3, 1}));
  EXPECT_EQ(values<uint8_t>(b[0]), values<uint8_t>(x));
  auto s = run(make_node("Squeeze", 13), {b[0], Tensor()});
  EXPECT_EQ(s[0].dims(), (Dims{2, 3}));
}

TEST(RefLayout, SplitUnevenNumOutputsAndExplicitSizes) {
  Tensor x = make<int64_t>({7}, {0, 1, 2, 3, 4, 5, 6});
  auto out = run(make_node("Split", 18, {{"num_outputs", int64_t{3}}}, 3), {x});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(values<int64_t>(out[2]), (std::vector<int64_t>{6}));
  out = run(make_node("Split", 11, {{"split", std::vector<int64_t>{2, 5}}}, 2), {x});
  EXPECT_EQ(values<int64_t>(out[1]), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_THROW(run(make_node("Split", 13, {}, 2), {x}), Error);  // 7 is not divisible by 2
}

TEST(RefLayout, TransposeDefaultPermAndConcat) {
  Tensor x = make<float>({2, 3}, iota_f(6));
  auto t = run(make_node("Transpose", 13), {x});
  EXPECT_EQ(t[0].dims(), (Dims{3, 2}));
  EXPECT_EQ(values<float>(t[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  auto c = run(make_node("Concat", 13, {{"axis", int64_t{-1}}}), {x, t[0].reshaped({2, 3})});
  EXPECT_EQ(c[0].dims(), (Dims{2, 6}));
  EXPECT_EQ(values<float>(c[0]), (std::vector<float>{0, 1, 2, 0, 3, 1, 3, 4, 5, 4, 2, 5}));
}

TEST(RefLayout, TriluShapeConstantOfShapeRange) {
  Tensor x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto lower = run(make_node("Trilu", 14, {{"upper", int64_t{0}}}), {x, make<int64_t>({}, {1})});
  EXPECT_EQ(values<float>(lower[0]), (std::vector<float>{1, 2, 0, 4, 5, 6}));
  auto upper = run(make_node("Trilu", 14), {x});
  EXPECT_EQ(values<float>(upper[0]), (std::vector<float>{1, 2, 3, 0, 5, 6}));

  auto shape = run(make_node("Shape", 15, {{"start", int64_t{-1}}}), {x});
  EXPECT_EQ(values<int64_t>(shape[0]), (std::vector<int64_t>{3}));

  auto c = run(make_node("ConstantOfShape", 9, {{"value", make<int32_t>({1}, {7})}}), {ints({2, 2})});
  EXPECT_EQ(values<int32_t>(c[0]), (std::vector<int32_t>{7, 7, 7, 7}));

  auto r = run(make_node("Range", 11), {make<int32_t>({}, {10}), make<int32_t>({}, {4}), make<int32_t>({}, {-3})});
  EXPECT_EQ(values<int32_t>(r[0]), (std::vector<int32_t>{10, 7}));
  auto f = run(make_node("Range", 11), {make<float>({}, {1}), make<float>({}, {2}), make<float>({}, {0.25f})});
  EXPECT_EQ(values<float>(f[0]), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
}

TEST(RefLayout, FlattenAxisZeroAndNegative) {
  Tensor y = make<float>({2, 3, 4}, iota_f(24));
  EXPECT_EQ(run(make_node("Flatten", 13, {{"axis", int64_t{0}}}), {y})[0].dims(), (Dims{1, 24}));
  EXPECT_EQ(run(make_node("Flatten", 13, {{"axis", int64_t{-1}}}), {y})[0].dims(), (Dims{6, 4}));
}

}  // namespace
}  // namespace fusor
