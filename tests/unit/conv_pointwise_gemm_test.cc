// A 1x1 convolution on a 1x1 image as a GEMM (kernels/cpu/conv_pointwise_gemm.cc) against the
// reference Conv: one and several images, channel counts below, at and past a vector and the
// squeeze-and-excitation sizes of MobileNetV3, with and without bias, with a residual and the
// activations a FusedConv carries; and the layers it must leave to the other convolutions.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.h"
#include "ir/op_table.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/ref/reference.h"
#include "fused_vs_reference.h"

namespace fusor {
namespace {

using V = std::vector<int64_t>;

struct Layer {
  int64_t n, c, oc;
  int64_t h = 1, w = 1, k = 1, group = 1;
  V pads = {0, 0, 0, 0};
};

struct Epilogue {
  bool bias = true, residual = false;
  std::string activation = "none";
};

Dims out_dims(const Layer& l) {
  return {l.n, l.oc, l.h + l.pads[0] + l.pads[2] - l.k + 1, l.w + l.pads[1] + l.pads[3] - l.k + 1};
}

Node conv_node(const Layer& l, bool bias) {
  Node n;
  n.name = "conv";
  n.op = Op::Conv;
  n.op_type = op_info(Op::Conv).name;
  n.opset = 17;
  n.attrs = {{"pads", l.pads}, {"kernel_shape", V{l.k, l.k}}, {"group", l.group}};
  n.inputs = bias ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1};
  n.outputs = {3};
  return n;
}

double activate(const std::string& a, double v) {
  if (a == "relu") return std::max(v, 0.0);
  if (a == "sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (a == "hardswish") return v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0);
  return v;
}

std::unique_ptr<Kernel> kernel(const Layer& l, const Epilogue& e, const Tensor& w, const Tensor& b) {
  const Node n = conv_node(l, e.bias);
  const std::vector<TensorType> ins = {{DType::Float32, {l.n, l.c, l.h, l.w}},
                                       {DType::Float32, w.dims()},
                                       {DType::Float32, {l.oc}},
                                       {DType::Float32, out_dims(l)}};
  const std::vector<TensorType> outs = {{DType::Float32, out_dims(l)}};
  const std::vector<const Tensor*> consts = {nullptr, &w, e.bias ? &b : nullptr, nullptr};
  cpu::ConvEpilogue epi{.has_bias = e.bias, .residual = e.residual ? 3 : -1, .activation = e.activation};
  return cpu::make_pointwise_conv_gemm(KernelRequest{n, ins, consts, outs}, epi);
}

void expect_matches_reference(const Layer& l, const Epilogue& e, uint32_t seed) {
  SCOPED_TRACE("n" + std::to_string(l.n) + " c" + std::to_string(l.c) + " oc" + std::to_string(l.oc) + " " +
               e.activation + (e.bias ? " bias" : "") + (e.residual ? " residual" : ""));
  const Tensor x = test::random_normal({l.n, l.c, 1, 1}, 1.f, seed);
  const Tensor w = test::random_normal({l.oc, l.c, 1, 1}, 1.f / std::sqrt(static_cast<float>(l.c)), seed + 1);
  const Tensor b = test::random_normal({l.oc}, 0.5f, seed + 2);
  const Tensor res = test::random_normal(out_dims(l), 1.f, seed + 3);

  std::vector<Tensor> want = {Tensor(DType::Float32, out_dims(l))};
  std::vector<Tensor> ref_in = {x, w};
  if (e.bias) ref_in.push_back(b);
  ref::evaluate(conv_node(l, e.bias), ref_in, want);
  for (int64_t i = 0; i < want[0].numel(); ++i) {
    double v = want[0].data<float>()[i];
    if (e.residual) v += res.data<float>()[i];
    want[0].data<float>()[i] = static_cast<float>(activate(e.activation, v));
  }

  auto k = kernel(l, e, w, b);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->name().rfind("conv1x1_f32", 0), 0u) << k->name();
  std::vector<std::byte> scratch(k->scratch_bytes());
  for (int run = 0; run < 2; ++run) {  // nothing a run leaves behind may change the next
    std::vector<Tensor> in = {x, w, b, res};
    std::vector<Tensor> out = {Tensor(DType::Float32, out_dims(l))};
    k->run(in, out, scratch);
    for (int64_t i = 0; i < want[0].numel(); ++i) {
      const float got = out[0].data<float>()[i], ref = want[0].data<float>()[i];
      ASSERT_NEAR(got, ref, 1e-5f + 1e-4f * std::abs(ref)) << "element " << i << " run " << run;
    }
  }
}

TEST(ConvPointwiseGemm, MatchesReferenceConv) {
  uint32_t seed = 1;
  for (int64_t n : {1, 3})
    for (auto [c, oc] : {std::pair<int64_t, int64_t>{8, 16}, {5, 7}, {144, 576}, {576, 144}, {16, 8}})
      for (const Epilogue& e : {Epilogue{}, Epilogue{.bias = false}, Epilogue{.activation = "relu"},
                                Epilogue{.activation = "hardswish"}, Epilogue{.residual = true, .activation = "sigmoid"},
                                Epilogue{.bias = false, .residual = true}})
        expect_matches_reference({n, c, oc}, e, seed += 4);
}

TEST(ConvPointwiseGemm, LeavesOtherLayersToTheConvolutions) {
  const Epilogue e;
  const auto declines = [&](const Layer& l) {
    const Tensor w = test::random_normal({l.oc, l.c / l.group, l.k, l.k}, 1.f, 7);
    const Tensor b = test::random_normal({l.oc}, 1.f, 8);
    return kernel(l, e, w, b) == nullptr;
  };
  EXPECT_TRUE(declines({.n = 1, .c = 8, .oc = 8, .h = 2, .w = 2}));                    // an image, not a vector
  EXPECT_TRUE(declines({.n = 1, .c = 8, .oc = 8, .h = 3, .w = 3, .k = 3}));            // a 3x3 kernel
  EXPECT_TRUE(declines({.n = 1, .c = 8, .oc = 8, .group = 2}));                        // grouped
  EXPECT_TRUE(declines({.n = 1, .c = 8, .oc = 8, .pads = {1, 1, 1, 1}}));              // padded: a 3x3 output
}

}  // namespace
}  // namespace fusor
