// Hand-checked cases for the nn family's reference kernels and shape functions (ConvTranspose,
// the normalizations, GlobalMaxPool, LpPool, MaxUnpool, DeformConv, Col2Im, MaxPool's Indices),
// and their one-line errors on bad input: edges the ONNX node tests do not reach.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

using V = std::vector<int64_t>;
Tensor filled(Dims dims, float v) { return make(dims, std::vector<float>(static_cast<size_t>(numel_of(dims)), v)); }
Tensor iota(Dims dims) {
  std::vector<float> v(static_cast<size_t>(numel_of(dims)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  return make(std::move(dims), v);
}

TEST(RefNnOps, ConvTransposeStridesPadsAndOutputShape) {
  Tensor x = make({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = filled({1, 1, 2, 2}, 1.f);
  // Stride 1: every input spreads over a 2x2 block; the blocks overlap.
  expect_values(run(node_of(Op::ConvTranspose, 11), {x, w})[0], {1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4});
  // Pads crop the border.
  expect_values(run(node_of(Op::ConvTranspose, 11, {{"pads", V{1, 1, 1, 1}}}), {x, w})[0], {1, 1, 1, 1}, {10});
  // Stride 2 and a bias: blocks side by side.
  auto s2 = run(node_of(Op::ConvTranspose, 11, {{"strides", V{2, 2}}}), {x, w, make({1}, {0.5f})});
  expect_values(s2[0], {1, 1, 4, 4},
                {1.5f, 1.5f, 2.5f, 2.5f, 1.5f, 1.5f, 2.5f, 2.5f, 3.5f, 3.5f, 4.5f, 4.5f, 3.5f, 3.5f, 4.5f, 4.5f});
  // A larger output_shape (or output_padding) grows the end with zeros.
  auto grown = run(node_of(Op::ConvTranspose, 11, {{"strides", V{2, 2}}, {"output_shape", V{5, 4}}}), {x, w});
  expect_values(grown[0], {1, 1, 5, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4, 0, 0, 0, 0});
  auto padded = run(node_of(Op::ConvTranspose, 11, {{"strides", V{2, 2}}, {"output_padding", V{1, 0}}}), {x, w});
  expect_values(padded[0], grown[0].dims(), test::values<float>(grown[0]));
  // A smaller one crops, the larger half at the start.
  auto cropped = run(node_of(Op::ConvTranspose, 11, {{"output_shape", V{2, 2}}}), {x, w});
  expect_values(cropped[0], {1, 1, 2, 2}, {10, 6, 7, 4});
}

TEST(RefNnOps, ConvTransposeGroupsAnd1d) {
  // Two groups of one channel: each output channel sees its own input channel.
  Tensor x = make({1, 2, 2}, {1, 2, 10, 20});
  Tensor w = make({2, 1, 2}, {1, 1, 1, -1});
  expect_values(run(node_of(Op::ConvTranspose, 11, {{"group", int64_t{2}}}), {x, w})[0], {1, 2, 3},
                {1, 3, 2, 10, 10, -20});
}

TEST(RefNnOps, ConvTransposeBadInput) {
  Tensor w = filled({3, 1, 2, 2}, 1.f);
  expect_error(node_of(Op::ConvTranspose, 11, {{"group", int64_t{2}}}), {filled({1, 3, 2, 2}, 1.f), w},
               "channels do not match");
  expect_error(node_of(Op::ConvTranspose, 11, {{"output_shape", V{4, 4, 4}}}), {filled({1, 3, 2, 2}, 1.f), w},
               "output_shape has 3 values for 2 spatial dims");
  expect_error(node_of(Op::ConvTranspose, 11, {{"strides", V{0, 1}}}), {filled({1, 3, 2, 2}, 1.f), w},
               "must be positive");
  expect_error(node_of(Op::ConvTranspose, 11, {{"pads", V{3, 3, 3, 3}}}), {filled({1, 3, 2, 2}, 1.f), w},
               "is negative");
}

TEST(RefNnOps, GroupNormalizationScalesPerGroupThenPerChannel) {
  Tensor x = iota({1, 4, 1, 2});  // groups {1..4} and {5..8}: mean 2.5 / 6.5, variance 1.25
  const float z = 1.5f / std::sqrt(1.25f), h = 0.5f / std::sqrt(1.25f);
  auto old = run(node_of(Op::GroupNormalization, 18, {{"num_groups", int64_t{2}}, {"epsilon", 0.f}}),
                 {x, make({2}, {1, 2}), make({2}, {0, 10})});
  expect_values(old[0], {1, 4, 1, 2}, {-z, -h, h, z, 10 - 2 * z, 10 - 2 * h, 10 + 2 * h, 10 + 2 * z});
  auto cur = run(node_of(Op::GroupNormalization, 21, {{"num_groups", int64_t{2}}, {"epsilon", 0.f}}),
                 {x, make({4}, {1, 1, 2, 2}), make({4}, {0, 1, 0, 1})});
  expect_values(cur[0], {1, 4, 1, 2}, {-z, -h, h + 1, z + 1, -2 * z, -2 * h, 2 * h + 1, 2 * z + 1});
  expect_error(node_of(Op::GroupNormalization, 21, {{"num_groups", int64_t{3}}}),
               {x, filled({4}, 1.f), filled({4}, 0.f)}, "num_groups 3 does not divide 4 channels");
  expect_error(node_of(Op::GroupNormalization, 21, {{"num_groups", int64_t{2}}}),
               {x, filled({2}, 1.f), filled({2}, 0.f)}, "scale must be a float32 vector of 4");
}

TEST(RefNnOps, InstanceNormalizationPerChannel) {
  auto y = run(node_of(Op::InstanceNormalization, 6),
               {make({1, 2, 2}, {1, 3, 5, 5}), make({2}, {2, 1}), make({2}, {0, 7})});
  expect_values(y[0], {1, 2, 2}, {-2, 2, 7, 7}, 1e-3f);  // a constant channel becomes its bias
  expect_error(node_of(Op::InstanceNormalization, 6), {make({1, 2, 2}, {1, 3, 5, 5}), filled({3}, 1.f), filled({2}, 0.f)},
               "scale must be");
}

TEST(RefNnOps, LpNormalizationL1L2AndZeroVector) {
  Tensor x = make({2, 2}, {3, -4, 0, 0});
  expect_values(run(node_of(Op::LpNormalization, 1), {x})[0], {2, 2}, {0.6f, -0.8f, 0, 0});
  expect_values(run(node_of(Op::LpNormalization, 1, {{"p", int64_t{1}}}), {x})[0], {2, 2}, {3.f / 7, -4.f / 7, 0, 0});
  expect_values(run(node_of(Op::LpNormalization, 1, {{"axis", int64_t{0}}}), {x})[0], {2, 2}, {1, -1, 0, 0});
  expect_error(node_of(Op::LpNormalization, 1, {{"p", int64_t{3}}}), {x}, "p must be 1 or 2");
}

TEST(RefNnOps, MeanVarianceNormalizationAxes) {
  Tensor x = make({1, 2, 1, 2}, {1, 3, 10, 10});
  expect_values(run(node_of(Op::MeanVarianceNormalization, 13), {x})[0], {1, 2, 1, 2}, {-1, 1, 0, 0}, 1e-4f);
  auto all = run(node_of(Op::MeanVarianceNormalization, 13, {{"axes", V{-1, 1}}}), {make({1, 2, 1, 2}, {0, 2, 0, 2})});
  expect_values(all[0], {1, 2, 1, 2}, {-1, 1, -1, 1}, 1e-4f);
  expect_error(node_of(Op::MeanVarianceNormalization, 13), {make({2, 2}, {1, 2, 3, 4})}, "out of range");
}

TEST(RefNnOps, LrnSumsNeighbourChannels) {
  // size 2: channel c sums itself and c + 1 (the later half is the larger); alpha / size = 1.
  Tensor x = make({1, 3, 1, 1}, {1, 2, 3});
  auto y = run(node_of(Op::LRN, 13, {{"size", int64_t{2}}, {"alpha", 2.f}, {"beta", 1.f}, {"bias", 1.f}}), {x});
  expect_values(y[0], {1, 3, 1, 1}, {1.f / 6, 2.f / 14, 3.f / 10});
  expect_error(node_of(Op::LRN, 13, {{"size", int64_t{0}}}), {x}, "size must be positive");
}

TEST(RefNnOps, GlobalMaxPoolAndLpPool) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto g = run(node_of(Op::GlobalMaxPool, 1), {make({1, 2, 1, 3}, {-5, -2, -9, 1, nan, 0})});
  ASSERT_EQ(g[0].dims(), (Dims{1, 2, 1, 1}));
  EXPECT_EQ(g[0].data<float>()[0], -2.f);
  EXPECT_TRUE(std::isnan(g[0].data<float>()[1]));
  // p = 2 over 2x2 windows; the padding adds zero.
  Node lp = node_of(Op::LpPool, 18, {{"kernel_shape", V{2, 2}}, {"pads", V{0, 0, 1, 1}}, {"strides", V{2, 2}}});
  auto y = run(lp, {make({1, 1, 3, 3}, {3, 4, 1, 0, 0, 2, 2, 0, 2})});
  expect_values(y[0], {1, 1, 2, 2}, {5, std::sqrt(5.f), 2, 2});
  lp.attrs["p"] = int64_t{1};
  expect_values(run(lp, {make({1, 1, 2, 2}, {-1, 2, -3, 4})})[0], {1, 1, 1, 1}, {10});
  lp.attrs["p"] = int64_t{0};
  expect_error(lp, {make({1, 1, 2, 2}, {-1, 2, -3, 4})}, "p must be");
}

TEST(RefNnOps, MaxPoolIndicesRowAndColumnMajor) {
  Node mp = node_of(Op::MaxPool, 12, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}}, 2);
  Tensor x = make({1, 2, 2, 2}, {1, 4, 2, 3, 9, 8, 7, 6});
  auto y = run(mp, {x});
  expect_values(y[0], {1, 2, 1, 1}, {4, 9});
  EXPECT_EQ(test::values<int64_t>(y[1]), (std::vector<int64_t>{1, 4}));  // flat over N, C, H, W
  mp.attrs["storage_order"] = int64_t{1};
  EXPECT_EQ(test::values<int64_t>(run(mp, {x})[1]), (std::vector<int64_t>{2, 4}));  // (h, w) = (0, 1) column-major
}

TEST(RefNnOps, MaxUnpoolScattersAndChecksIndices) {
  Node up = node_of(Op::MaxUnpool, 11, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}});
  Tensor x = make({1, 1, 1, 2}, {5, 6});
  expect_values(run(up, {x, make_i64({1, 1, 1, 2}, {1, 6})})[0], {1, 1, 2, 4}, {0, 5, 0, 0, 0, 0, 6, 0});
  // A larger output_shape keeps the unpooled block at its start.
  auto big = run(up, {x, make_i64({1, 1, 1, 2}, {1, 6}), make_i64({4}, {1, 1, 3, 5})});
  expect_values(big[0], {1, 1, 3, 5}, {0, 5, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0});
  expect_error(up, {x, make_i64({1, 1, 1, 2}, {1, 8})}, "index 8 is outside the unpooled shape");
  expect_error(up, {x, make_i64({1, 1, 1, 2}, {1, 6}), make_i64({4}, {1, 1, 1, 5})}, "smaller than");
}

TEST(RefNnOps, Col2ImAddsOverlappingBlocks) {
  // 2x2 blocks over a 3x3 image, stride 1: four blocks; each pixel counts the blocks covering it.
  Node c = node_of(Op::Col2Im, 18);
  auto y = run(c, {filled({1, 4, 4}, 1.f), make_i64({2}, {3, 3}), make_i64({2}, {2, 2})});
  expect_values(y[0], {1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1});
  expect_error(c, {filled({1, 4, 5}, 1.f), make_i64({2}, {3, 3}), make_i64({2}, {2, 2})},
               "input has 5 blocks, the image holds 4");
  expect_error(c, {filled({1, 6, 4}, 1.f), make_i64({2}, {3, 3}), make_i64({2}, {2, 2})}, "not a multiple");
}

TEST(RefNnOps, DeformConvBilinearOffsetsAndMask) {
  Tensor x = iota({1, 1, 3, 3});
  Tensor w = filled({1, 1, 1, 1}, 2.f);
  Node n = node_of(Op::DeformConv, 19);
  // Zero offsets: a plain 1x1 convolution.
  expect_values(run(n, {x, w, filled({1, 2, 3, 3}, 0.f)})[0], {1, 1, 3, 3}, {2, 4, 6, 8, 10, 12, 14, 16, 18});
  // Half a pixel right: the mean of two neighbours; past the last column, half a zero.
  std::vector<float> off(18, 0.f);
  for (int i = 9; i < 18; ++i) off[i] = 0.5f;
  auto half = run(n, {x, w, make({1, 2, 3, 3}, off), make({1}, {1}), filled({1, 1, 3, 3}, 0.5f)});
  expect_values(half[0], {1, 1, 3, 3}, {2.5f, 3.5f, 2.5f, 5.5f, 6.5f, 4.f, 8.5f, 9.5f, 5.5f});
  // Offsets far outside (or infinite) read zero; a NaN offset gives NaN.
  auto far = run(n, {x, w, make({1, 2, 3, 3}, {1e30f, -INFINITY, 5, 0, 0, 0, 0, 0, NAN, 0, 0, 0, 0, 0, 0, 0, 0, 0})});
  expect_values(far[0], {1, 1, 3, 3}, {0, 0, 0, 8, 10, 12, 14, 16, NAN});
  expect_error(node_of(Op::DeformConv, 19, {{"offset_group", int64_t{2}}}), {iota({1, 3, 3, 3}), filled({1, 3, 1, 1}, 1.f),
               filled({1, 4, 3, 3}, 0.f)}, "offset_group 2 does not divide 3 channels");
  expect_error(n, {x, w, filled({1, 4, 3, 3}, 0.f)}, "offset must be [1, 2, 3, 3]");
}

TEST(RefNnOps, AveragePoolDilations) {
  Node ap = node_of(Op::AveragePool, 19, {{"kernel_shape", V{2}}, {"dilations", V{2}}});
  expect_values(run(ap, {make({1, 1, 4}, {1, 2, 3, 4})})[0], {1, 1, 2}, {2, 3});
  expect_error(node_of(Op::AveragePool, 11, {{"kernel_shape", V{2}}, {"dilations", V{2}}}),
               {make({1, 1, 4}, {1, 2, 3, 4})}, "dilations are not part of AveragePool before opset 19");
}

// ceil_mode's last window runs past the padded input: with count_include_pad its divisor counts
// the taps inside the padded input (PyTorch's and ONNX Runtime's), not the whole kernel. A 5x5
// ramp pooled 2x2 by 2: the right column averages 2 values, the corner 1 (HF Funnel exports it).
TEST(RefNnOps, AveragePoolCeilModeCountsOnlyThePaddedInput) {
  std::vector<float> ramp(25);
  for (int i = 0; i < 25; ++i) ramp[static_cast<size_t>(i)] = static_cast<float>(i);
  Node ap = node_of(Op::AveragePool, 19, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}, {"ceil_mode", int64_t{1}},
                                          {"count_include_pad", int64_t{1}}});
  expect_values(run(ap, {make({1, 1, 5, 5}, ramp)})[0], {1, 1, 3, 3}, {3, 5, 6.5, 13, 15, 16.5, 20.5, 22.5, 24});
  // With a pad of 1 the padding counts, the overhang past it does not: on a 4-wide row padded to
  // [-1, 5), the last window [3, 6) holds x[3] and one pad, so 4 / 2 (torch's avg_pool1d too).
  ap.attrs["kernel_shape"] = V{3};
  ap.attrs["strides"] = V{2};
  ap.attrs["pads"] = V{1, 1};
  expect_values(run(ap, {make({1, 1, 4}, {1, 2, 3, 4})})[0], {1, 1, 3}, {1, 3, 2});
}

}  // namespace
}  // namespace fusor
