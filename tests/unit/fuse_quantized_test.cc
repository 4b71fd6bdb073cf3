// QDQ units on int8 kernels (passes/fuse_quantized.cc, the quantized Elementwise program): what
// fuses, what is declined and why, and that the fused plan computes what the reference plan of
// the QDQ graph computes: exactly for pools and elementwise units, within one quantization step
// at rare ties for a convolution (check/compare.h's rule, the gate's).
#include <gtest/gtest.h>

#include <random>

#include "fused_vs_reference.h"
#include "graph_builder.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/int8_support.h"

namespace fusor {
namespace {

using test::GraphBuilder;
using V = std::vector<int64_t>;

template <class T>
Tensor filled(DType type, Dims dims, std::vector<T> values) {
  Tensor t(type, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = values[static_cast<size_t>(i) % values.size()];
  return t;
}
Tensor f32(float v) { return filled<float>(DType::Float32, {}, {v}); }
Tensor u8(uint8_t v) { return filled<uint8_t>(DType::UInt8, {}, {v}); }

template <class T>
Tensor uniform(DType type, Dims dims, int lo, int hi, uint32_t seed) {
  Tensor t(type, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

// Outputs of a fused QDQ unit against the reference plan: one step at rare ties (the gate's rule).
Tolerance one_step() {
  Tolerance t = twin_tolerance();
  t.quantization_steps = 1;
  return t;
}

FusionConfig fusion() { return FusionConfig{}; }

std::string reasons(const Plan& p, const std::string& pass) {
  std::string all;
  for (const NotFused& nf : p.fusion.not_fused)
    if (nf.pass == pass) all += nf.reason + "; ";
  return all;
}

std::vector<std::string> kinds(const Plan& p) {
  std::vector<std::string> k;
  for (const FusionItem& i : p.fusion.items) k.push_back(i.kind);
  return k;
}

int64_t count_kind(const Plan& p, const std::string& kind) {
  const auto k = kinds(p);
  return std::count(k.begin(), k.end(), kind);
}

struct ConvOptions {
  bool relu = true;
  int8_t weight_zero_point = 0;
  bool float_result = false;
  int weight_range = 60;  // |w| <= 60: no pair of u8 x s8 products saturates vpmaddubsw (> 128 could)  // the Conv result goes on in float (a Sigmoid) instead of being quantized
};

// x (float [1, 8, 12, 12]) -> Q -> DQ -> Conv 3x3 (int8 weights per channel, int32 bias) [-> Relu] -> Q.
std::shared_ptr<Graph> qdq_conv(const ConvOptions& o = {}) {
  GraphBuilder b;
  const int x = b.input("x");
  const int sx = b.constant("sx", f32(0.05f)), zx = b.constant("zx", u8(128));
  const int qx = b.node(Op::QuantizeLinear, {x, sx, zx}, "qx", DType::UInt8);
  const int dx = b.node(Op::DequantizeLinear, {qx, sx, zx}, "dx");
  std::vector<float> scales;
  for (int c = 0; c < 16; ++c) scales.push_back(0.002f + 0.0002f * static_cast<float>(c));
  const int w = b.constant("w", uniform<int8_t>(DType::Int8, {16, 8, 3, 3}, -o.weight_range, o.weight_range, 1));
  const int sw = b.constant("sw", filled<float>(DType::Float32, {16}, scales));
  const int zw = b.constant("zw", filled<int8_t>(DType::Int8, {16}, {o.weight_zero_point}));
  const int dw = b.node(Op::DequantizeLinear, {w, sw, zw}, "dw", DType::Float32, {{"axis", int64_t{0}}});
  std::vector<float> bias_scales;
  for (float s : scales) bias_scales.push_back(0.05f * s);
  const int bq = b.constant("b", uniform<int32_t>(DType::Int32, {16}, -3000, 3000, 2));
  const int sb = b.constant("sb", filled<float>(DType::Float32, {16}, bias_scales));
  const int db = b.node(Op::DequantizeLinear, {bq, sb}, "db", DType::Float32, {{"axis", int64_t{0}}});
  int y = b.node(Op::Conv, {dx, dw, db}, "conv", DType::Float32,
                 {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}});
  if (o.float_result) return b.finish({b.node(Op::Sigmoid, {y}, "sigmoid")});
  if (o.relu) y = b.node(Op::Relu, {y}, "relu");
  const int sy = b.constant("sy", f32(0.08f)), zy = b.constant("zy", u8(o.relu ? 0 : 128));
  const int qy = b.node(Op::QuantizeLinear, {y, sy, zy}, "qy", DType::UInt8);
  return b.finish({qy, b.node(Op::DequantizeLinear, {qy, sy, zy}, "y")});
}

test::Feeds conv_inputs() { return {{"x", test::random_normal({1, 8, 12, 12}, 2.f, 3)}}; }

TEST(FuseQuantized, ConvReluRunsOnTheInt8KernelWithinOneStep) {
  Tolerance tol = one_step();
  tol.atol = 0.08 * 1.0001;  // the dequantized output: one step of its scale
  auto r = test::expect_fused_matches_reference(qdq_conv(), conv_inputs(), fusion(), tol);
  EXPECT_EQ(kinds(r.fused), std::vector<std::string>{"QuantizedConv"});
  EXPECT_NE(r.kernels().find("qconv2d_u8s8u8_bias_relu_onednn_packed"), std::string::npos) << r.kernels();
}

// Weights up to 127: without VNNI a pair of products could saturate vpmaddubsw's int16, so the
// unit runs as its QDQ body; with VNNI (vpdpbusd accumulates in int32) the int8 kernel is exact.
TEST(FuseQuantized, WeightsThatCouldSaturateRunTheBodyWithoutVnni) {
  Tolerance tol = one_step();
  tol.atol = 0.08 * 1.0001;
  auto r = test::expect_fused_matches_reference(qdq_conv({.weight_range = 127}), conv_inputs(), fusion(), tol);
  if (cpu::onednn_int8_has_vnni()) {
    EXPECT_EQ(count_kind(r.fused, "QuantizedConv"), 1) << r.kernels();
  } else {
    EXPECT_EQ(count_kind(r.fused, "QuantizedConv"), 0) << r.kernels();
    EXPECT_NE(reasons(r.fused, "plan").find("saturate"), std::string::npos) << reasons(r.fused, "plan");
  }
}

TEST(FuseQuantized, ConvWithoutActivationKeepsTheZeroPoint) {
  auto r = test::expect_fused_matches_reference(qdq_conv({.relu = false}), conv_inputs(), fusion(), [] {
    Tolerance t = one_step();
    t.atol = 0.08 * 1.0001;
    return t;
  }());
  EXPECT_NE(r.kernels().find("qconv2d_u8s8u8_bias_onednn_packed"), std::string::npos) << r.kernels();
  // Negative results exist: the zero point (128) must be applied, not a clamp at 0.
  const Tensor& q = r.fused_outputs[0];
  int below = 0;
  for (int64_t i = 0; i < q.numel(); ++i) below += q.data<uint8_t>()[i] < 128;
  EXPECT_GT(below, q.numel() / 10);
}

TEST(FuseQuantized, AsymmetricWeightsAreDeclined) {
  auto r = test::expect_fused_matches_reference(qdq_conv({.weight_zero_point = 3}), conv_inputs(), fusion(), [] {
    Tolerance t = one_step();
    t.atol = 0.08 * 1.0001;
    return t;
  }());
  EXPECT_EQ(count_kind(r.fused, "QuantizedConv"), 0);
  EXPECT_NE(reasons(r.fused, "fuse_quantized").find("asymmetric"), std::string::npos)
      << reasons(r.fused, "fuse_quantized");
}

TEST(FuseQuantized, AnUnquantizedResultIsDeclined) {
  auto r = test::expect_fused_matches_reference(qdq_conv({.float_result = true}), conv_inputs(), fusion());
  EXPECT_EQ(count_kind(r.fused, "QuantizedConv"), 0);
  EXPECT_NE(reasons(r.fused, "fuse_quantized").find("not quantized"), std::string::npos)
      << reasons(r.fused, "fuse_quantized");
}

// q (uint8 [1, 4, 9, 9]) -> DQ -> MaxPool 3x3 stride 2 -> Q, with the same or another scale.
std::shared_ptr<Graph> qdq_max_pool(float out_scale) {
  GraphBuilder b;
  const int q = b.input("q", DType::UInt8);
  const int s = b.constant("s", f32(0.1f)), z = b.constant("z", u8(30));
  const int d = b.node(Op::DequantizeLinear, {q, s, z}, "d");
  const int p = b.node(Op::MaxPool, {d}, "p", DType::Float32,
                       {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}});
  const int s2 = out_scale == 0.1f ? s : b.constant("s2", f32(out_scale));
  return b.finish({b.node(Op::QuantizeLinear, {p, s2, z}, "y", DType::UInt8)});
}

test::Feeds pool_inputs() { return {{"q", uniform<uint8_t>(DType::UInt8, {1, 4, 9, 9}, 0, 255, 4)}}; }

TEST(FuseQuantized, MaxPoolOfOneScalePoolsTheIntegersExactly) {
  auto r = test::expect_fused_matches_reference(qdq_max_pool(0.1f), pool_inputs(), fusion());  // integers equal
  EXPECT_EQ(kinds(r.fused), std::vector<std::string>{"QuantizedMaxPool"});
  EXPECT_NE(r.kernels().find("maxpool2d_u8_onednn"), std::string::npos) << r.kernels();
}

TEST(FuseQuantized, MaxPoolRequantizedToAnotherScaleIsDeclined) {
  auto r = test::expect_fused_matches_reference(qdq_max_pool(0.2f), pool_inputs(), fusion());
  EXPECT_EQ(count_kind(r.fused, "QuantizedMaxPool"), 0);
  EXPECT_NE(reasons(r.fused, "fuse_quantized").find("scale, zero point or type"), std::string::npos);
}

// The residual of a QDQ ResNet block: DQ(a) + DQ(b) -> Relu -> Q, one Elementwise on bytes, and
// the same integers as the reference plan (the program runs QuantizeLinear's float32 operations).
TEST(FuseQuantized, ResidualAddIsOneElementwiseOnBytes) {
  GraphBuilder b;
  const int qa = b.input("qa", DType::UInt8), qb = b.input("qb", DType::Int8);
  const int sa = b.constant("sa", f32(0.03f)), za = b.constant("za", u8(100));
  const int sb = b.constant("sb", f32(0.045f)), zb = b.constant("zb", filled<int8_t>(DType::Int8, {}, {-5}));
  const int sy = b.constant("sy", f32(0.05f)), zy = b.constant("zy", u8(0));
  const int a = b.node(Op::DequantizeLinear, {qa, sa, za}, "a"), d = b.node(Op::DequantizeLinear, {qb, sb, zb}, "d");
  const int sum = b.node(Op::Relu, {b.node(Op::Add, {a, d}, "sum")}, "relu");
  auto g = b.finish({b.node(Op::QuantizeLinear, {sum, sy, zy}, "y", DType::UInt8)});
  test::Feeds in = {{"qa", uniform<uint8_t>(DType::UInt8, {2, 16, 7, 7}, 0, 255, 5)},
                    {"qb", uniform<int8_t>(DType::Int8, {2, 16, 7, 7}, -128, 127, 6)}};
  auto r = test::expect_fused_matches_reference(g, in, fusion());
  EXPECT_EQ(kinds(r.fused), std::vector<std::string>{"Elementwise"});
  EXPECT_NE(r.kernels().find("elementwise_q8_5ops"), std::string::npos) << r.kernels();
}

// A DequantizeLinear read by a Conv unit and by an Add: the Conv takes its own copy.
TEST(FuseQuantized, SharedDequantizeIsCopiedForTheConv) {
  GraphBuilder b;
  const int q = b.input("q", DType::UInt8);
  const int s = b.constant("s", f32(0.05f)), z = b.constant("z", u8(128));
  const int d = b.node(Op::DequantizeLinear, {q, s, z}, "d");
  const int w = b.constant("w", uniform<int8_t>(DType::Int8, {4, 4, 1, 1}, -60, 60, 7));
  const int dw = b.node(Op::DequantizeLinear, {w, b.constant("sw", f32(0.01f))}, "dw");
  const int conv = b.node(Op::Conv, {d, dw}, "conv", DType::Float32, {{"kernel_shape", V{1, 1}}});
  const int qc = b.node(Op::QuantizeLinear, {conv, s, z}, "qc", DType::UInt8);
  const int sum = b.node(Op::Add, {b.node(Op::DequantizeLinear, {qc, s, z}, "dc"), d}, "sum");
  auto g = b.finish({b.node(Op::QuantizeLinear, {sum, s, z}, "y", DType::UInt8)});
  test::Feeds in = {{"q", uniform<uint8_t>(DType::UInt8, {1, 4, 6, 6}, 0, 255, 8)}};
  auto r = test::expect_fused_matches_reference(g, in, fusion(), one_step());
  auto k = kinds(r.fused);
  std::sort(k.begin(), k.end());
  EXPECT_EQ(k, (std::vector<std::string>{"Elementwise", "QuantizedConv"})) << r.kernels();
}

// quantize_dynamic's form: DynamicQuantizeLinear(x) -> MatMulInteger -> Cast -> Mul(x_scale *
// w_scale) -> Add(bias) [-> Gelu] [-> Add(residual input r)]. The epilogue runs in the int8
// matmul's output stage: the same float32 operations, so the result is the reference plan's
// within the twin tolerance.
struct DynamicEpilogue {
  bool bias = true, gelu = false, residual = false;
};
std::shared_ptr<Graph> dynamic_matmul(DynamicEpilogue e) {
  const bool bias = e.bias;
  GraphBuilder b;
  const int x = b.input("x");
  const int residual = e.residual ? b.input("r") : -1;
  const int xq = b.node(Op::DynamicQuantizeLinear, {x}, "xq", DType::UInt8);
  Graph& g = *b.finish({});
  Node& dql = g.nodes.back();  // DynamicQuantizeLinear makes three outputs
  for (const char* name : {"x_scale", "x_zero_point"}) {
    Value v;
    v.name = name;
    v.dtype = std::string(name) == "x_scale" ? DType::Float32 : DType::UInt8;
    v.producer = static_cast<int>(g.nodes.size()) - 1;
    dql.outputs.push_back(g.add_value(v));
  }
  const int x_scale = dql.outputs[1], x_zp = dql.outputs[2];
  const int w = b.constant("w", uniform<int8_t>(DType::Int8, {32, 24}, -60, 60, 9));
  std::vector<float> ws;
  for (int n = 0; n < 24; ++n) ws.push_back(0.001f * static_cast<float>(n + 1));
  const int scale = b.node(Op::Mul, {x_scale, b.constant("w_scale", filled<float>(DType::Float32, {24}, ws))}, "scale");
  const int acc = b.node(Op::MatMulInteger, {xq, w, x_zp}, "acc", DType::Int32);
  const int f = b.node(Op::Cast, {acc}, "f", DType::Float32, {{"to", DType::Float32}});
  int y = b.node(Op::Mul, {f, scale}, "y");
  if (bias) y = b.node(Op::Add, {b.constant("bias", test::random_normal({24}, 1.f, 10)), y}, "biased");
  if (e.gelu) y = b.node(Op::Gelu, {y}, "gelu");
  if (e.residual) y = b.node(Op::Add, {residual, y}, "residual");
  return b.finish({y});
}

TEST(FuseQuantized, DynamicMatMulDequantizesInTheInt8MatMul) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "with bias" : "without bias");
    auto r = test::expect_fused_matches_reference(dynamic_matmul({.bias = bias}),
                                                  {{"x", test::random_normal({2, 5, 32}, 1.f, 11)}}, fusion());
    EXPECT_EQ(count_kind(r.fused, "QuantizedMatMul"), 1) << r.kernels();
    const std::string kernel = bias ? "matmul_integer_dequantized_u8s8_bias_onednn" : "matmul_integer_dequantized_u8s8_onednn";
    EXPECT_NE(r.kernels().find(kernel), std::string::npos) << r.kernels();
  }
}

// The FFN up-projection's Gelu and the output projection's residual Add join the int8 matmul's
// output stage (fuse_gemm_epilogue), so neither passes over the float32 result again.
TEST(FuseQuantized, DynamicMatMulTakesItsActivationAndResidual) {
  for (DynamicEpilogue e : {DynamicEpilogue{.gelu = true}, DynamicEpilogue{.residual = true},
                            DynamicEpilogue{.gelu = true, .residual = true}, DynamicEpilogue{.bias = false, .gelu = true}}) {
    SCOPED_TRACE(std::string(e.bias ? "bias" : "") + (e.gelu ? " gelu" : "") + (e.residual ? " residual" : ""));
    test::Feeds in = {{"x", test::random_normal({2, 5, 32}, 1.f, 11)}};
    if (e.residual) in["r"] = test::random_normal({2, 5, 24}, 1.f, 12);
    auto r = test::expect_fused_matches_reference(dynamic_matmul(e), in, fusion());
    EXPECT_EQ(count_kind(r.fused, "QuantizedMatMul"), 2) << r.kernels();  // the unit, then it with its epilogue
    const std::string kernel = std::string("matmul_integer_dequantized_u8s8") + (e.bias ? "_bias" : "") +
                               (e.gelu ? "_gelu_erf" : "") + (e.residual ? "_residual" : "") + "_onednn";
    EXPECT_NE(r.kernels().find(kernel), std::string::npos) << r.kernels();
    EXPECT_EQ(r.kernels().find("gelu_f32"), std::string::npos) << r.kernels();
    EXPECT_EQ(r.kernels().find("add_f32"), std::string::npos) << r.kernels();
  }
}

// The dynamic epilogue must leave the int8 matmul on oneDNN's brgemm: a runtime output scale once
// moved it to the jit gemm, 3-6x slower, with every output still right (docs/benchmarks.md).
TEST(FuseQuantized, DynamicMatMulStaysOnTheBrgemmKernels) {
  if (!cpu::onednn_int8_has_vnni()) GTEST_SKIP() << "oneDNN 2.6 has int8 brgemm only with VNNI or AMX";
  for (DynamicEpilogue e : {DynamicEpilogue{}, DynamicEpilogue{.gelu = true, .residual = true}}) {
    test::Feeds in = {{"x", test::random_normal({2, 5, 32}, 1.f, 11)}};
    if (e.residual) in["r"] = test::random_normal({2, 5, 24}, 1.f, 12);
    const auto r = test::run_fused_and_reference(dynamic_matmul(e), in, fusion());
    std::string impls;
    for (const Step& s : r.fused.steps) impls += cpu::int8_matmul_implementation(*s.kernel);
    EXPECT_NE(impls.find("brg:"), std::string::npos) << (impls.empty() ? "no int8 matmul kernel" : impls);
  }
}

// A QDQ MatMul (W [K, N], scales per column on axis 1) and a QDQ Gemm (transB: W [N, K], scales
// on axis 0, an int32 bias behind a DequantizeLinear), each ending in a QuantizeLinear: one int8
// matmul that requantizes in its output stage, within one step of the reference plan.
std::shared_ptr<Graph> qdq_matmul(bool gemm) {
  GraphBuilder b;
  const int x = b.input("x");
  const int sx = b.constant("sx", f32(0.04f)), zx = b.constant("zx", u8(120));
  const int dx = b.node(Op::DequantizeLinear, {b.node(Op::QuantizeLinear, {x, sx, zx}, "qx", DType::UInt8), sx, zx}, "dx");
  std::vector<float> scales;
  for (int n = 0; n < 24; ++n) scales.push_back(0.003f + 0.0001f * static_cast<float>(n));
  const int w = b.constant("w", uniform<int8_t>(DType::Int8, gemm ? Dims{24, 32} : Dims{32, 24}, -60, 60, 12));
  const int dw = b.node(Op::DequantizeLinear, {w, b.constant("sw", filled<float>(DType::Float32, {24}, scales))}, "dw",
                        DType::Float32, {{"axis", int64_t{gemm ? 0 : 1}}});
  int y;
  if (gemm) {
    std::vector<float> bias_scales;
    for (float sc : scales) bias_scales.push_back(0.04f * sc);
    const int db = b.node(Op::DequantizeLinear, {b.constant("b", uniform<int32_t>(DType::Int32, {24}, -2000, 2000, 13)),
                                                 b.constant("sb", filled<float>(DType::Float32, {24}, bias_scales))},
                          "db", DType::Float32, {{"axis", int64_t{0}}});
    y = b.node(Op::Gemm, {dx, dw, db}, "gemm", DType::Float32, {{"transB", int64_t{1}}});
  } else {
    y = b.node(Op::Relu, {b.node(Op::MatMul, {dx, dw}, "mm")}, "relu");
  }
  const int sy = b.constant("sy", f32(0.05f)), zy = b.constant("zy", u8(gemm ? 128 : 0));
  return b.finish({b.node(Op::QuantizeLinear, {y, sy, zy}, "y", DType::UInt8)});
}

TEST(FuseQuantized, QdqMatMulAndGemmRequantizeInTheInt8MatMul) {
  for (bool gemm : {false, true}) {
    SCOPED_TRACE(gemm ? "Gemm" : "MatMul");
    const Dims in = gemm ? Dims{6, 32} : Dims{2, 5, 32};
    auto r = test::expect_fused_matches_reference(qdq_matmul(gemm), {{"x", test::random_normal(in, 1.5f, 14)}}, fusion(),
                                                  one_step());
    EXPECT_EQ(count_kind(r.fused, "QuantizedMatMul"), 1) << r.kernels();
    const std::string kernel = gemm ? "matmul_integer_requantized_u8_u8s8_bias_onednn" : "matmul_integer_requantized_u8_u8s8_relu";
    EXPECT_NE(r.kernels().find(kernel), std::string::npos) << r.kernels();
  }
}

TEST(FuseQuantized, AGemmColumnBiasIsDeclinedWhenItHasTheOutputsWidth) {
  // C [M, 1] with M == N has N elements, like a row [N]: fused as a row, row r took bias[c]
  // where it must take bias[r] (132 steps off on a random 4 x 4).
  GraphBuilder b;
  const int x = b.input("x");
  const int sx = b.constant("sx", f32(0.04f)), zx = b.constant("zx", u8(120));
  const int dx = b.node(Op::DequantizeLinear, {b.node(Op::QuantizeLinear, {x, sx, zx}, "qx", DType::UInt8), sx, zx}, "dx");
  const int dw = b.node(Op::DequantizeLinear, {b.constant("w", uniform<int8_t>(DType::Int8, {8, 8}, -60, 60, 21)),
                                               b.constant("sw", f32(0.01f))},
                        "dw");
  Tensor column(DType::Float32, {8, 1});
  for (int64_t r = 0; r < 8; ++r) column.data<float>()[r] = 0.5f * static_cast<float>(r);
  const int y = b.node(Op::Gemm, {dx, dw, b.constant("c", column)}, "gemm");
  const int sy = b.constant("sy", f32(0.05f)), zy = b.constant("zy", u8(128));
  auto g = b.finish({b.node(Op::QuantizeLinear, {y, sy, zy}, "y", DType::UInt8)});
  auto r = test::expect_fused_matches_reference(g, {{"x", test::random_normal({8, 8}, 1.5f, 22)}}, fusion(), one_step());
  EXPECT_EQ(count_kind(r.fused, "QuantizedMatMul"), 0) << r.kernels();
  EXPECT_NE(reasons(r.fused, "fuse_quantized").find("Gemm's C is not a row"), std::string::npos)
      << reasons(r.fused, "fuse_quantized");
}

TEST(FuseQuantized, EveryNeighbourPairAlongTheReductionCountsForSaturation) {
  // [0, 127, 127, 0] repeated: the pairs from an even index sum to 127, the others to 254. For
  // K = 257 oneDNN's AVX2 kernel pairs the latter: MatMulInteger gave 3121184 for 4145280.
  std::vector<int8_t> w(257);
  for (size_t k = 0; k < w.size(); ++k) w[k] = (k % 4 == 1 || k % 4 == 2) ? 127 : 0;
  EXPECT_TRUE(cpu::int8_weights_may_saturate(w.data(), 1, 257, 1));
  std::vector<int8_t> safe(257, 64);  // 64 + 64 = 128: no pair saturates
  EXPECT_FALSE(cpu::int8_weights_may_saturate(safe.data(), 1, 257, 1));
}

}  // namespace
}  // namespace fusor
