// Hand-checked cases for the reference kernels and shape functions of group C (softmax,
// layer norm, reductions, MatMul/Gemm, Conv, pools).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

TEST(RefNn, MatMul2x3By3x2) {
  auto y = run(node_of(Op::MatMul, 13), {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({3, 2}, {7, 8, 9, 10, 11, 12})});
  expect_values(y[0], {2, 2}, {58, 64, 139, 154});
}

TEST(RefNn, MatMulBatchBroadcastAndVectors) {
  // [2,1,2,2] @ [3,2,1] -> [2,3,2,1]
  auto y = run(node_of(Op::MatMul, 13),
               {make({2, 1, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}), make({3, 2, 1}, {1, 2, 3, 4, 5, 6})});
  expect_values(y[0], {2, 3, 2, 1}, {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
  // 1-D @ 2-D drops the prepended dim; 2-D @ 1-D drops the appended one.
  auto v = run(node_of(Op::MatMul, 13), {make({2}, {1, 1}), make({2, 3}, {1, 2, 3, 4, 5, 6})});
  expect_values(v[0], {3}, {5, 7, 9});
  auto w = run(node_of(Op::MatMul, 13), {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({3}, {1, 0, 1})});
  expect_values(w[0], {2}, {4, 10});
}

TEST(RefNn, MatMulFloat64AndInt64) {
  Tensor a(DType::Float64, {1, 2}), b(DType::Float64, {2, 1});
  a.data<double>()[0] = 1e-9; a.data<double>()[1] = 1.0;
  b.data<double>()[0] = 1.0; b.data<double>()[1] = 1.0;
  EXPECT_DOUBLE_EQ(run(node_of(Op::MatMul, 13), {a, b})[0].data<double>()[0], 1.0 + 1e-9);
  auto y = run(node_of(Op::MatMul, 13), {make_i64({1, 2}, {3, 4}), make_i64({2, 1}, {5, 6})});
  EXPECT_EQ(y[0].data<int64_t>()[0], 39);
}

TEST(RefNn, GemmTransBWithBias) {
  Node n = node_of(Op::Gemm, 13, {{"transB", int64_t{1}}, {"alpha", 2.0f}, {"beta", 0.5f}});
  // A [2,3], B^T given as [2,3], C [2] broadcast along rows.
  auto y = run(n, {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({2, 3}, {1, 0, 0, 0, 1, 1}), make({2}, {10, 20})});
  // A @ B = [[1, 5], [4, 11]]; 2*AB + 0.5*C
  expect_values(y[0], {2, 2}, {7, 20, 13, 32});
  // beta 0 leaves C out, NaN and all (0 * NaN is NaN), as ONNX Runtime does.
  n.attrs["beta"] = 0.0f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  y = run(n, {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({2, 3}, {1, 0, 0, 0, 1, 1}), make({2}, {nan, nan})});
  expect_values(y[0], {2, 2}, {2, 10, 8, 22});
}

TEST(RefNn, SoftmaxAxisSemanticsDependOnOpset) {
  Tensor x = make({2, 2}, {0, 0, 0, std::log(3.0f)});
  // Opset 11, axis 0: the input is coerced to [1, 4]: one softmax over all four elements.
  auto old = run(node_of(Op::Softmax, 11, {{"axis", int64_t{0}}}), {x});
  expect_values(old[0], {2, 2}, {1.f / 6, 1.f / 6, 1.f / 6, 3.f / 6});
  // Opset 13, axis 0: softmax down each column.
  auto cur = run(node_of(Op::Softmax, 13, {{"axis", int64_t{0}}}), {x});
  expect_values(cur[0], {2, 2}, {0.5f, 0.25f, 0.5f, 0.75f});
  // Default axis (-1 from 13) normalizes rows.
  auto def = run(node_of(Op::LogSoftmax, 13), {x});
  expect_values(def[0], {2, 2}, {std::log(0.5f), std::log(0.5f), std::log(0.25f), std::log(0.75f)});
}

TEST(RefNn, ReduceMeanAxesAttributeVsInput) {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  auto a = run(node_of(Op::ReduceMean, 13, {{"axes", std::vector<int64_t>{1}}}), {x});
  expect_values(a[0], {2, 1}, {2, 5});
  auto b = run(node_of(Op::ReduceMean, 18, {{"keepdims", int64_t{0}}}), {x, make_i64({1}, {0})});
  expect_values(b[0], {3}, {2.5f, 3.5f, 4.5f});
  auto all = run(node_of(Op::ReduceSum, 13, {{"keepdims", int64_t{0}}}), {x, Tensor()});
  expect_values(all[0], {}, {21});
  auto noop = run(node_of(Op::ReduceSum, 13, {{"noop_with_empty_axes", int64_t{1}}}), {x, Tensor()});
  expect_values(noop[0], {2, 3}, {1, 2, 3, 4, 5, 6});
  auto mx = run(node_of(Op::ReduceMax, 13, {{"axes", std::vector<int64_t>{-2}}}), {x});
  expect_values(mx[0], {1, 3}, {4, 5, 6});
}

TEST(RefNn, LayerNormOneRowWithStats) {
  Node n = node_of(Op::LayerNormalization, 17, {{"epsilon", 0.0f}}, 3);
  auto y = run(n, {make({1, 4}, {1, 2, 3, 4}), make({4}, {1, 1, 2, 2}), make({4}, {0, 0, 0, 1})});
  float inv = 1.f / std::sqrt(1.25f);  // variance of 1..4 is 1.25
  expect_values(y[0], {1, 4}, {-1.5f * inv, -0.5f * inv, 1.0f * inv, 3.0f * inv + 1});
  expect_values(y[1], {1, 1}, {2.5f});
  expect_values(y[2], {1, 1}, {inv});
}

TEST(RefNn, Conv3x3WithPad) {
  std::vector<float> xs(9);
  for (int i = 0; i < 9; ++i) xs[i] = static_cast<float>(i + 1);
  Node n = node_of(Op::Conv, 11, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  auto y = run(n, {make({1, 1, 3, 3}, xs), make({1, 1, 3, 3}, std::vector<float>(9, 1.f)), make({1}, {0.5f})});
  // Sums of each 3x3 neighbourhood of [[1,2,3],[4,5,6],[7,8,9]], plus bias.
  expect_values(y[0], {1, 1, 3, 3}, {12.5f, 21.5f, 16.5f, 27.5f, 45.5f, 33.5f, 24.5f, 39.5f, 28.5f});
  Node s = node_of(Op::Conv, 11, {{"strides", std::vector<int64_t>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  auto z = run(s, {make({1, 1, 3, 3}, xs), make({1, 1, 3, 3}, std::vector<float>(9, 1.f))});
  expect_values(z[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(RefNn, PoolCeilModeAndCountIncludePad) {
  std::vector<float> xs(16);
  for (int i = 0; i < 16; ++i) xs[i] = static_cast<float>(i + 1);
  Tensor x = make({1, 1, 4, 4}, xs);
  Node mp = node_of(Op::MaxPool, 12, {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                      {"strides", std::vector<int64_t>{2, 2}}, {"ceil_mode", int64_t{1}}});
  expect_values(run(mp, {x})[0], {1, 1, 2, 2}, {11, 12, 15, 16});
  mp.attrs["ceil_mode"] = int64_t{0};
  expect_values(run(mp, {x})[0], {1, 1, 1, 1}, {11});
  Node ap = node_of(Op::AveragePool, 11, {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                          {"pads", std::vector<int64_t>{1, 1, 0, 0}},
                                          {"strides", std::vector<int64_t>{2, 2}}});
  expect_values(run(ap, {x})[0], {1, 1, 2, 2}, {1, 2.5f, 7, 8.5f});
  ap.attrs["count_include_pad"] = int64_t{1};
  expect_values(run(ap, {x})[0], {1, 1, 2, 2}, {0.25f, 1.25f, 3.5f, 8.5f});
  expect_values(run(node_of(Op::GlobalAveragePool, 1), {x})[0], {1, 1, 1, 1}, {8.5f});
}

// A NaN anywhere in a window is the window's max (numpy's and PyTorch's); it counted only as the
// window's first tap.
TEST(RefNn, MaxPoolKeepsNaNAnywhereInTheWindow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Node mp = node_of(Op::MaxPool, 12, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  std::vector<float> xs = {1, 2, 5, 6, 3, nan, 7, 8, nan, 1, 1, 1, 1, 1, 1, 9};
  const std::vector<float> y = values<float>(run(mp, {make({1, 1, 4, 4}, xs)})[0]);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_TRUE(std::isnan(y[0]));  // NaN as the last tap
  EXPECT_EQ(y[1], 8.f);
  EXPECT_TRUE(std::isnan(y[2]));  // NaN as the first tap
  EXPECT_EQ(y[3], 9.f);
}

TEST(RefNn, ErrorsNameTheNode) {
  try {
    run(node_of(Op::MatMul, 13), {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({2, 3}, {1, 2, 3, 4, 5, 6})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'test_MatMul' (op MatMul): inner dimensions differ"), std::string::npos)
        << e.what();
  }
  // Axes given as an input must be known at plan time.
  Node r = node_of(Op::ReduceMean, 18);
  std::vector<TensorType> types = {{DType::Float32, {2, 2}}, {DType::Int64, {1}}};
  std::vector<const Tensor*> consts = {nullptr, nullptr};
  EXPECT_THROW(op_info(r.op).infer(InferContext{r, types, consts}), Error);
  EXPECT_THROW(run(node_of(Op::Conv, 11, {{"group", int64_t{2}}}),
                   {make({1, 3, 2, 2}, std::vector<float>(12)), make({2, 1, 1, 1}, {1, 1})}),
               Error);
}

}  // namespace
}  // namespace fusor
