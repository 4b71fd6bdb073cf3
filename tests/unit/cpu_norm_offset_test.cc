// LayerNorm and GroupNorm on rows with a large common offset (x = 1e4 + N(0, 1)), against the
// same arithmetic in double. Summed in float, x loses the noise's low bits, and a mean held in one
// float is off by up to half its ulp (5e-4 at 1e4): every output moved by that (8.6e-4 for
// LayerNorm, 1.5e-3 and 2.8e-3 for GroupNorm, against ~1e-6 taken about the row's first value).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/cpu/backend.h"
#include "group_norm_graph.h"

namespace fusor {
namespace {

Tensor offset_values(const Dims& dims, double offset, uint32_t seed) {
  Tensor t(DType::Float32, dims);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(offset) + noise(rng);
  return t;
}

Tensor filled(const Dims& dims, float v) {
  Tensor t(DType::Float32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

// Runs `node` on the CPU backend with every input after the first constant.
Tensor run(const Node& node, const std::vector<Tensor>& in) {
  std::vector<TensorType> types;
  std::vector<const Tensor*> consts;
  for (size_t i = 0; i < in.size(); ++i) {
    types.push_back({DType::Float32, in[i].dims()});
    consts.push_back(i == 0 ? nullptr : &in[i]);
  }
  const std::vector<TensorType> out_types = {{DType::Float32, in[0].dims()}};
  auto kernel = cpu::backend().select(KernelRequest{node, types, consts, out_types}).kernel;
  EXPECT_NE(kernel, nullptr);
  std::vector<Tensor> out = {Tensor(DType::Float32, in[0].dims())};
  kernel->run(in, out, {});
  return out[0];
}

// Largest |y - normalize(x)| over groups of `n` consecutive values, normalized in double.
double max_error_vs_double(const Tensor& x, const Tensor& y, int64_t n, double eps) {
  double worst = 0;
  const float* xs = x.data<float>();
  const float* ys = y.data<float>();
  for (int64_t r = 0; r < x.numel() / n; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += xs[r * n + i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (xs[r * n + i] - mean) * (xs[r * n + i] - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(ys[r * n + i] - (xs[r * n + i] - mean) * rstd));
  }
  return worst;
}

TEST(NormWithOffset, LayerNormKeepsTheNoiseOfALargeOffset) {
  Node node;
  node.name = "ln";
  node.op = Op::LayerNormalization;
  node.op_type = "LayerNormalization";
  node.attrs = {{"epsilon", 1e-12f}, {"axis", int64_t{-1}}};
  node.inputs = {0, 1, 2};
  node.outputs = {3};
  const Tensor x = offset_values({4, 8192}, 1e4, 1);
  const Tensor y = run(node, {x, filled({8192}, 1.f), filled({8192}, 0.f)});
  EXPECT_LT(max_error_vs_double(x, y, 8192, 1e-12), 1e-5);
}

TEST(NormWithOffset, GroupNormKeepsTheNoiseOfALargeOffset) {
  const Dims dims = {1, 32, 64, 64};
  for (int64_t groups : {32, 8}) {
    SCOPED_TRACE(groups);
    const Node node = test::fused_group_norm_node(groups, false);
    const Tensor x = offset_values(dims, 1e4, 2);
    const Tensor y = run(node, {x, filled({groups}, 1.f), filled({groups}, 0.f), filled({32, 1, 1}, 1.f),
                                filled({32, 1, 1}, 0.f)});
    EXPECT_LT(max_error_vs_double(x, y, 32 / groups * 64 * 64, 1e-5), 1e-5);
  }
}

}  // namespace
}  // namespace fusor
