// Twin tests: every optimized CPU kernel against the reference kernel of the same node, on the
// same seeded random inputs. Each case asserts that the CPU backend selected a fast kernel (not
// the reference fallback) and that outputs agree under check/compare.h's twin rule
// (|a-b| <= 1e-5 + 1e-4*|b|, tests/unit/fused_vs_reference.h reports where they do not).
// Adding a case is one line in kCases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ir/graph.h"
#include "ir/op_table.h"
#include "kernels/cpu/backend.h"
#include "kernels/cpu/int8_support.h"
#include "kernels/ref/quant_values.h"
#include "kernels/ref/reference.h"
#include "fused_vs_reference.h"

namespace fusor {
namespace {

enum class Gen { Normal, Positive, Index, Values };

// One input: dims, dtype, whether it is a plan-time constant, how its values are made.
struct In {
  Dims dims;
  DType dtype = DType::Float32;
  bool constant = false;
  Gen gen = Gen::Normal;
  int64_t range = 0;              // Index: values in [-range, range) or [0, range)
  float scale = 1.f;              // Normal: standard deviation
  std::vector<double> values;     // Values: exact contents
  bool omitted = false;
};
In make_in(Dims d, DType t, bool constant, Gen gen, int64_t range = 0, std::vector<double> values = {}) {
  In i;
  i.dims = std::move(d);
  i.dtype = t;
  i.constant = constant;
  i.gen = gen;
  i.range = range;
  i.values = std::move(values);
  return i;
}
In f(Dims d) { return make_in(std::move(d), DType::Float32, false, Gen::Normal); }     // activation
In fc(Dims d) { return make_in(std::move(d), DType::Float32, true, Gen::Normal); }     // weight
// A weight with standard deviation 1/sqrt(fan_in), as trained layers have: fp32 GEMM rounding then
// stays within the tolerance (the reference accumulates in double).
In fw(Dims d, int64_t fan_in) {
  In i = make_in(std::move(d), DType::Float32, true, Gen::Normal);
  i.scale = 1.f / std::sqrt(static_cast<float>(fan_in));
  return i;
}
In fs(Dims d, float scale) {  // float32 activation with standard deviation `scale`
  In i = make_in(std::move(d), DType::Float32, false, Gen::Normal);
  i.scale = scale;
  return i;
}
In fv(Dims d, std::vector<double> v) { return make_in(std::move(d), DType::Float32, false, Gen::Values, 0, std::move(v)); }
// Where exp over- or underflows in float, up to the extremes (21 values).
const std::vector<double> kExtremes = {-INFINITY, -3.4e38, -1e4, -150, -104, -88.8, -87, -20, -1e-3, -1e-30, 0,
                                       1e-30, 1e-3, 20, 87, 88.8, 104, 150, 1e4, 3.4e38, INFINITY};
In pos(Dims d) { return make_in(std::move(d), DType::Float32, false, Gen::Positive); } // in (0.1, 3)
In idx(Dims d, int64_t v) { return make_in(std::move(d), DType::Int64, false, Gen::Index, v); }       // [0, v)
In idx_neg(Dims d, int64_t v) { return make_in(std::move(d), DType::Int64, false, Gen::Index, -v); }  // [-v, v)
In idx32(Dims d, int64_t v) { return make_in(std::move(d), DType::Int32, false, Gen::Index, v); }
In cf(Dims d, std::vector<double> v) { return make_in(std::move(d), DType::Float32, true, Gen::Values, 0, std::move(v)); }
In ci(Dims d, std::vector<double> v) { return make_in(std::move(d), DType::Int64, true, Gen::Values, 0, std::move(v)); }
In none() { In i; i.omitted = true; return i; }
// Quantized operands: u8 activations in [0, 256), s8 weights in [-range, range) (64: the reduced
// range that cannot saturate vpmaddubsw; 128: the full range that can), zero points.
In u8(Dims d) { return make_in(std::move(d), DType::UInt8, false, Gen::Index, 256); }
In s8(Dims d) { return make_in(std::move(d), DType::Int8, false, Gen::Index, -128); }
In s8w(Dims d, int64_t range) { return make_in(std::move(d), DType::Int8, true, Gen::Index, -range); }
// n scales from `first`, each `step` larger (per-channel scales).
std::vector<double> ramp(size_t n, double first, double step) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = first + step * static_cast<double>(i);
  return v;
}
In bias32(Dims d) { return make_in(std::move(d), DType::Int32, true, Gen::Index, -2000); }
In zp(DType t, std::vector<double> v, bool constant = false) {
  Dims d = v.size() == 1 ? Dims{} : Dims{static_cast<int64_t>(v.size())};
  return make_in(std::move(d), t, constant, Gen::Values, 0, std::move(v));
}

using Attrs = std::map<std::string, Attribute>;

struct Case {
  const char* name;
  Op op;
  std::vector<In> inputs;
  Attrs attrs = {};
  int opset = 17;
  const char* expect_kernel = "";  // substring of the chosen kernel's name, or alternatives "a|b"
  size_t outputs = 1;
  // An int8 case oneDNN computes exactly only with VNNI (weights whose u8 x s8 products saturate
  // vpmaddubsw; s8 convolution inputs, for which it halves the weights): without VNNI
  // (ONEDNN_MAX_CPU_ISA=AVX2) the fast kernel must be declined, with VNNI it must be exact.
  bool needs_vnni = false;
};

// gtest prints a failing case's parameter with this (found by argument-dependent lookup, so it
// is a free function in Case's namespace) instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

using V = std::vector<int64_t>;

// A GEMM on packed weights, whichever runs it on this CPU (OnednnMatmul::name_suffix).
constexpr const char* kPackedGemm = "_panel|_gemv|_rows|_onednn_packed";

const Case kCases[] = {
    // MatMul: MiniLM projections against packed weights, attention batched matmuls, odd sizes.
    {"mm_qkv_b1", Op::MatMul, {f({1, 128, 384}), fw({384, 384}, 384)}, {}, 14, "matmul_f32_panel|matmul_f32_onednn_packed"},
    {"mm_ffn1_b8", Op::MatMul, {f({8, 128, 384}), fw({384, 1536}, 384)}, {}, 14, "matmul_f32_panel|matmul_f32_onednn_packed"},
    {"mm_ffn2_b1", Op::MatMul, {f({1, 128, 1536}), fw({1536, 384}, 1536)}, {}, 14, "matmul_f32_panel|matmul_f32_onednn_packed"},
    {"mm_scores", Op::MatMul, {f({1, 12, 128, 32}), f({1, 12, 32, 128})}, {}, 14, "matmul_f32_batched_onednn"},
    {"mm_context_b2", Op::MatMul, {f({2, 12, 128, 128}), f({2, 12, 128, 32})}, {}, 14, "batched"},
    {"mm_odd_packed", Op::MatMul, {f({3, 17, 33}), fc({33, 45})}, {}, 14, kPackedGemm},
    {"mm_2d_runtime", Op::MatMul, {f({5, 7}), f({7, 3})}, {}, 14, "matmul_f32_onednn"},
    {"mm_bcast_b", Op::MatMul, {f({2, 1, 4, 5}), f({3, 5, 6})}, {}, 14, "batched"},
    {"mm_bcast_a", Op::MatMul, {f({4, 5}), f({2, 3, 5, 6})}, {}, 14, "batched"},
    {"mm_vec_a", Op::MatMul, {f({7}), fc({7, 5})}, {}, 14, kPackedGemm},
    {"mm_vec_b", Op::MatMul, {f({3, 4, 7}), f({7})}, {}, 14, "matmul"},
    {"mm_const_batched", Op::MatMul, {f({2, 7, 9}), fc({2, 9, 4})}, {}, 14, "batched_onednn_packed"},
    // Gemm.
    {"gemm_bias", Op::Gemm, {f({4, 7}), fc({7, 5}), fc({5})}, {}, 13, "gemm_f32_bias_panel|gemm_f32_bias_rows|gemm_f32_bias_onednn_packed"},
    {"gemm_transb_ab", Op::Gemm, {f({4, 7}), fc({5, 7}), fc({1, 5})},
     {{"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.f}}, 13, kPackedGemm},
    {"gemm_transa_c", Op::Gemm, {f({7, 4}), f({7, 5}), f({4, 5})}, {{"transA", int64_t{1}}}, 13, "addc"},
    {"gemm_alpha_runtime_c", Op::Gemm, {f({6, 7}), f({7, 5}), f({1, 5})}, {{"alpha", 0.5f}}, 13, "addc"},
    {"gemm_const_c_beta", Op::Gemm, {f({6, 7}), f({7, 5}), fc({6, 5})}, {{"alpha", 0.5f}, {"beta", 3.f}}, 13, "addc"},
    {"gemm_const_rowc_beta", Op::Gemm, {f({6, 7}), fw({7, 5}, 7), fc({6, 1})}, {{"beta", 0.25f}}, 13, "addc"},
    {"gemm_alpha_noc", Op::Gemm, {f({4, 7}), f({7, 5})}, {{"alpha", 2.f}}, 13, "gemm_f32_onednn"},
    {"gemm_scalar_c", Op::Gemm, {f({3, 6}), fc({6, 9}), fc({1})}, {}, 13, "bias"},
    // MatMulInteger: MiniLM's dynamic quantization (u8 activations with a run-time zero point,
    // s8 weights with zero zero points per column), s8 activations, no zero points, odd sizes.
    {"mmi_qkv_b1", Op::MatMulInteger, {u8({1, 128, 384}), s8w({384, 384}, 64), zp(DType::UInt8, {131}), zp(DType::Int8, {0}, true)},
     {}, 10, "matmul_integer_u8s8_onednn_packed"},
    {"mmi_ffn_per_column_zp", Op::MatMulInteger, {u8({2, 16, 64}), s8w({64, 40}, 64), zp(DType::UInt8, {7}),
     zp(DType::Int8, std::vector<double>(40, 0.0), true)}, {}, 10, "u8s8"},
    {"mmi_s8_no_zp", Op::MatMulInteger, {s8({5, 33}), s8w({33, 17}, 64)}, {}, 10, "matmul_integer_s8s8"},
    {"mmi_const_a_zp", Op::MatMulInteger, {u8({3, 7, 20}), s8w({20, 9}, 64), zp(DType::UInt8, {255}, true)}, {}, 10, "u8s8"},
    {"mmi_full_range_weights", Op::MatMulInteger, {u8({4, 64}), s8w({64, 48}, 128)}, {}, 10, "u8s8", 1, true},
    {"gemm_classifier", Op::Gemm, {f({2, 512}), fw({1000, 512}, 512), fc({1000})}, {{"transB", int64_t{1}}}, 13, kPackedGemm},
    // Conv and pooling.
    {"conv_s2_p1", Op::Conv, {f({1, 3, 17, 19}), fc({8, 3, 3, 3}), fc({8})},
     {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}, 17, "conv2d_f32_bias"},
    // An image's first layer (conv_image_input.cc; written row-major here, as a graph output):
    // stride 2 with padding, dilation with uneven pads, a 5x5 SAME layer over two channels.
    {"conv_image_input_s2", Op::Conv, {f({2, 3, 17, 19}), fc({16, 3, 3, 3}), fc({16})},
     {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}, 17, "image_input"},
    {"conv_image_input_dilated", Op::Conv, {f({1, 1, 12, 13}), fc({32, 1, 3, 3})},
     {{"dilations", V{2, 2}}, {"pads", V{2, 0, 1, 3}}}, 17, "image_input"},
    {"conv_image_input_5x5_same", Op::Conv, {f({1, 2, 9, 30}), fc({16, 2, 5, 5})},
     {{"auto_pad", std::string("SAME_UPPER")}}, 17, "image_input"},
    {"conv_group_dil", Op::Conv, {f({2, 8, 10, 10}), fc({8, 2, 3, 3})}, {{"group", int64_t{4}}, {"dilations", V{2, 2}}},
     17, "grouped"},
    {"conv_depthwise", Op::Conv, {f({1, 16, 9, 9}), fc({16, 1, 3, 3}), fc({16})}, {{"group", int64_t{16}}, {"pads", V{1, 1, 1, 1}}},
     17, "grouped"},
    // ConvInteger: ResNet-like u8 x s8 layers with a zero point (padding reads it), grouped, 1-D,
    // s8 activations, and full-range weights (see Case::needs_vnni).
    {"convi_resnet_zp", Op::ConvInteger, {u8({1, 64, 14, 14}), s8w({64, 64, 3, 3}, 64), zp(DType::UInt8, {128})},
     {{"pads", V{1, 1, 1, 1}}}, 10, "conv2d_integer_u8s8_onednn_packed"},
    {"convi_s2_const_zp", Op::ConvInteger, {u8({2, 3, 17, 19}), s8w({8, 3, 3, 3}, 64), zp(DType::UInt8, {9}, true)},
     {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}, 10, "u8s8"},
    {"convi_grouped", Op::ConvInteger, {u8({1, 8, 9, 9}), s8w({8, 2, 3, 3}, 64), zp(DType::UInt8, {3}),
     zp(DType::Int8, {0}, true)}, {{"group", int64_t{4}}}, 10, "grouped"},
    {"convi_1d_s8", Op::ConvInteger, {s8({1, 4, 20}), s8w({6, 4, 5}, 64)}, {{"pads", V{2, 1}}}, 10, "s8s8", 1, true},
    {"convi_full_range_weights", Op::ConvInteger, {u8({1, 32, 8, 8}), s8w({16, 32, 3, 3}, 128)}, {}, 10, "u8s8", 1, true},
    // QLinearMatMul and QLinearConv: the integer kernels above, then the reference's requantization
    // (per tensor and per channel scales, QLinearConv's int32 bias, QLinearMatMul's wrapping).
    {"qmm_per_tensor", Op::QLinearMatMul, {u8({2, 16, 64}), cf({}, {0.02}), zp(DType::UInt8, {120}, true), s8w({64, 40}, 64),
     cf({}, {0.01}), zp(DType::Int8, {0}, true), cf({}, {0.15}), zp(DType::UInt8, {128}, true)}, {}, 10, "qlinear_matmul_integer_u8s8"},
    {"qmm_per_column", Op::QLinearMatMul, {u8({5, 33}), cf({}, {0.02}), zp(DType::UInt8, {7}, true), s8w({33, 12}, 64),
     cf({12}, ramp(12, 0.004, 0.001)), zp(DType::Int8, std::vector<double>(12, 0.0), true), cf({}, {0.05}),
     zp(DType::UInt8, {128}, true)}, {}, 10, "qlinear_matmul"},
    {"qconv_resnet_bias", Op::QLinearConv, {u8({1, 16, 10, 10}), cf({}, {0.02}), zp(DType::UInt8, {128}, true),
     s8w({8, 16, 3, 3}, 64), cf({8}, ramp(8, 0.004, 0.001)), zp(DType::Int8, std::vector<double>(8, 0.0), true), cf({}, {0.1}),
     zp(DType::UInt8, {100}, true), bias32({8})}, {{"pads", V{1, 1, 1, 1}}}, 10, "qlinear_conv2d_integer_u8s8"},
    {"qconv_s8_out_no_bias", Op::QLinearConv, {u8({2, 4, 9, 9}), cf({}, {0.03}), zp(DType::UInt8, {3}, true), s8w({6, 4, 3, 3}, 64),
     cf({}, {0.01}), zp(DType::Int8, {0}, true), cf({}, {0.2}), zp(DType::Int8, {-5}, true)}, {{"strides", V{2, 2}}}, 10, "qlinear_conv2d"},
    {"qconv_full_range_weights", Op::QLinearConv, {u8({1, 32, 6, 6}), cf({}, {0.02}), zp(DType::UInt8, {128}, true),
     s8w({16, 32, 3, 3}, 128), cf({}, {0.01}), zp(DType::Int8, {0}, true), cf({}, {0.5}), zp(DType::UInt8, {128}, true)},
     {}, 10, "qlinear_conv2d", 1, true},
    // Per-tensor QuantizeLinear and DequantizeLinear (a QDQ model's activations): ties round half
    // to even, extremes saturate, no zero point means uint8 and 0.
    {"quantize_u8_zp", Op::QuantizeLinear, {fs({2, 64, 28, 28}, 3.f), cf({}, {0.05}), zp(DType::UInt8, {128}, true)}, {}, 13,
     "quantize_linear_f32_u8"},
    {"quantize_ties", Op::QuantizeLinear, {fv({8}, {0.25, 0.75, 1.25, -0.25, -0.75, -1.25, 63.75, -64.25}), cf({}, {0.5}),
     zp(DType::Int8, {0}, true)}, {}, 13, "quantize_linear_f32_s8"},
    {"quantize_extremes", Op::QuantizeLinear, {fv({21}, kExtremes), cf({}, {0.5}), zp(DType::Int8, {-3}, true)}, {}, 13, "s8"},
    {"quantize_no_zp", Op::QuantizeLinear, {f({100}), cf({}, {0.01})}, {}, 13, "quantize_linear_f32_u8"},
    {"dynamic_quantize_qkv_input", Op::DynamicQuantizeLinear, {fs({1, 128, 384}, 2.f)}, {}, 11, "dynamic_quantize_linear", 3},
    {"dynamic_quantize_positive", Op::DynamicQuantizeLinear, {pos({3, 37})}, {}, 11, "dynamic_quantize_linear", 3},
    {"dynamic_quantize_extremes", Op::DynamicQuantizeLinear, {fv({21}, kExtremes)}, {}, 11, "dynamic_quantize_linear", 3},
    {"dequantize_u8", Op::DequantizeLinear, {u8({2, 64, 28, 28}), cf({}, {0.05}), zp(DType::UInt8, {128}, true)}, {}, 13,
     "dequantize_linear_u8_f32"},
    {"dequantize_s8_no_zp", Op::DequantizeLinear, {s8({3, 37}), cf({}, {0.02})}, {}, 13, "dequantize_linear_s8_f32"},
    {"conv_1d", Op::Conv, {f({1, 4, 20}), fc({6, 4, 5})}, {{"pads", V{2, 1}}}, 17, "conv2d"},
    {"conv_resnet", Op::Conv, {f({1, 64, 28, 28}), fw({64, 64, 3, 3}, 576)}, {{"pads", V{1, 1, 1, 1}}}, 17, "conv2d"},
    {"conv_same_upper", Op::Conv, {f({1, 3, 10, 11}), fc({4, 3, 4, 4})}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2, 2}}},
     17, "conv2d"},
    // ConvTranspose: a U-Net upsampling layer, output_padding, groups with dilation, 1-D with
    // SAME_UPPER, 3-D, and output_shape larger and smaller than the uncropped size.
    {"deconv_unet", Op::ConvTranspose, {f({1, 64, 16, 16}), fw({64, 32, 2, 2}, 64), fc({32})}, {{"strides", V{2, 2}}},
     17, "deconv2d_f32_bias"},
    {"deconv_outpad", Op::ConvTranspose, {f({1, 4, 7, 9}), fc({4, 3, 3, 3})},
     {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}, {"output_padding", V{1, 1}}}, 17, "deconv2d"},
    {"deconv_group_dil", Op::ConvTranspose, {f({2, 4, 5, 5}), fc({4, 3, 3, 3})}, {{"group", int64_t{2}}, {"dilations", V{2, 2}}},
     17, "deconv2d_f32_grouped"},
    {"deconv_1d_same", Op::ConvTranspose, {f({1, 3, 10}), fc({3, 2, 4})}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2}}},
     17, "deconv2d"},
    {"deconv_3d", Op::ConvTranspose, {f({1, 2, 3, 4, 5}), fc({2, 3, 2, 2, 2})}, {{"strides", V{2, 2, 2}}}, 17, "deconv3d"},
    {"deconv_shape_grow", Op::ConvTranspose, {f({1, 2, 4, 4}), fc({2, 2, 3, 3})}, {{"strides", V{2, 2}}, {"output_shape", V{10, 9}}},
     17, "deconv2d"},
    {"deconv_shape_crop", Op::ConvTranspose, {f({1, 2, 4, 4}), fc({2, 2, 3, 3})}, {{"strides", V{2, 2}}, {"output_shape", V{7, 8}}},
     17, "deconv2d"},
    {"maxpool_s2_p1", Op::MaxPool, {f({1, 8, 15, 15})}, {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}},
     17, "maxpool2d"},
    {"maxpool_ceil", Op::MaxPool, {f({1, 3, 10, 10})}, {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"ceil_mode", int64_t{1}}},
     17, "maxpool2d"},
    {"avgpool_k2", Op::AveragePool, {f({2, 4, 8, 8})}, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}}, 17, "avgpool2d"},
    {"avgpool_pad_incl", Op::AveragePool, {f({1, 3, 7, 7})},
     {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}}, 17, "avgpool2d"},
    {"avgpool_pad_excl", Op::AveragePool, {f({1, 3, 7, 7})}, {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}}, 17, "avgpool2d"},
    {"global_avgpool", Op::GlobalAveragePool, {f({2, 16, 7, 7})}, {}, 17, "reduce_mean"},
    // Unary.
    {"relu", Op::Relu, {f({1, 128, 1536})}, {}, 14, "relu"},
    {"sigmoid_odd", Op::Sigmoid, {f({3, 37})}, {}, 14, "sigmoid"},
    {"tanh", Op::Tanh, {f({5, 129})}, {}, 14, "tanh"},
    {"exp", Op::Exp, {f({1000})}, {}, 14, "exp"},
    {"log", Op::Log, {pos({17, 19})}, {}, 14, "log"},
    {"sqrt", Op::Sqrt, {pos({8, 128, 1})}, {}, 14, "sqrt"},
    {"reciprocal", Op::Reciprocal, {pos({33})}, {}, 14, "reciprocal"},
    {"neg", Op::Neg, {f({2, 3, 5})}, {}, 14, "neg"},
    {"abs", Op::Abs, {f({71})}, {}, 14, "abs"},
    {"erf_minilm", Op::Erf, {f({1, 128, 1536})}, {}, 14, "erf"},
    {"erf_b8_odd", Op::Erf, {f({8, 127, 1533})}, {}, 14, "erf"},
    {"erf_wide", Op::Erf, {fs({4099}, 3.f)}, {}, 14, "erf"},
    {"gelu", Op::Gelu, {f({3, 100})}, {}, 20, "gelu"},
    {"gelu_tanh", Op::Gelu, {f({3, 100})}, {{"approximate", std::string("tanh")}}, 20, "gelu_tanh"},
    {"clip_inputs", Op::Clip, {f({4, 33}), cf({}, {-0.5}), cf({}, {0.7})}, {}, 13, "clip"},
    {"clip_min_only", Op::Clip, {f({4, 33}), cf({}, {0.0}), none()}, {}, 13, "clip"},
    {"clip_attrs", Op::Clip, {f({4, 33})}, {{"min", -1.f}, {"max", 1.f}}, 6, "clip"},
    {"leaky_relu", Op::LeakyRelu, {f({3, 41})}, {{"alpha", 0.2f}}, 14, "leakyrelu"},
    {"hard_sigmoid", Op::HardSigmoid, {f({3, 41})}, {}, 14, "hardsigmoid"},
    {"hard_swish", Op::HardSwish, {f({3, 41})}, {}, 14, "hardswish"},
    {"exp_extremes", Op::Exp, {fv({21}, kExtremes)}, {}, 14, "exp"},
    {"log_extremes", Op::Log, {fv({21}, kExtremes)}, {}, 14, "log"},
    {"sigmoid_extremes", Op::Sigmoid, {fv({21}, kExtremes)}, {}, 14, "sigmoid"},
    {"tanh_extremes", Op::Tanh, {fv({21}, kExtremes)}, {}, 14, "tanh"},
    {"softplus", Op::Softplus, {f({3, 41})}, {}, 1, "softplus"},
    {"softplus_wide", Op::Softplus, {fs({4099}, 60.f)}, {}, 1, "softplus"},
    {"softplus_extremes", Op::Softplus, {fv({21}, kExtremes)}, {}, 1, "softplus"},
    {"mish", Op::Mish, {f({3, 41})}, {}, 18, "mish"},
    {"mish_wide", Op::Mish, {fs({4099}, 60.f)}, {}, 18, "mish"},
    {"mish_extremes", Op::Mish, {fv({21}, kExtremes)}, {}, 18, "mish"},
    {"elu", Op::Elu, {f({3, 41})}, {{"alpha", 0.7f}}, 6, "elu"},
    {"elu_wide", Op::Elu, {fs({4099}, 60.f)}, {}, 6, "elu"},
    {"elu_extremes", Op::Elu, {fv({21}, kExtremes)}, {{"alpha", 2.f}}, 6, "elu"},
    {"floor", Op::Floor, {fs({3, 41}, 3.f)}, {}, 13, "floor_f32"},
    {"floor_extremes", Op::Floor, {fv({21}, kExtremes)}, {}, 13, "floor_f32"},
    {"ceil", Op::Ceil, {fs({3, 41}, 3.f)}, {}, 13, "ceil_f32"},
    {"ceil_extremes", Op::Ceil, {fv({21}, kExtremes)}, {}, 13, "ceil_f32"},
    {"round", Op::Round, {fv({8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e9, -0.49})}, {}, 11, "round_f32"},
    {"sign", Op::Sign, {fv({21}, kExtremes)}, {}, 13, "sign_f32"},
    {"sin", Op::Sin, {fs({4099}, 10.f)}, {}, 7, "sin_f32"},
    {"sin_extremes", Op::Sin, {fv({21}, kExtremes)}, {}, 7, "sin_f32"},
    {"cos", Op::Cos, {fs({4099}, 10.f)}, {}, 7, "cos_f32"},
    {"cos_extremes", Op::Cos, {fv({21}, kExtremes)}, {}, 7, "cos_f32"},
    {"tan", Op::Tan, {fs({3, 41}, 1.f)}, {}, 7, "tan_f32"},
    {"tan_extremes", Op::Tan, {fv({21}, kExtremes)}, {}, 7, "tan_f32"},
    {"asin", Op::Asin, {fs({3, 41}, 0.5f)}, {}, 7, "asin_f32"},
    {"asin_extremes", Op::Asin, {fv({21}, kExtremes)}, {}, 7, "asin_f32"},
    {"acos", Op::Acos, {fs({3, 41}, 0.5f)}, {}, 7, "acos_f32"},
    {"acos_extremes", Op::Acos, {fv({21}, kExtremes)}, {}, 7, "acos_f32"},
    {"atan", Op::Atan, {fs({4099}, 10.f)}, {}, 7, "atan_f32"},
    {"atan_extremes", Op::Atan, {fv({21}, kExtremes)}, {}, 7, "atan_f32"},
    {"sinh", Op::Sinh, {fs({4099}, 30.f)}, {}, 9, "sinh_f32"},
    {"sinh_extremes", Op::Sinh, {fv({21}, kExtremes)}, {}, 9, "sinh_f32"},
    {"cosh", Op::Cosh, {fs({4099}, 30.f)}, {}, 9, "cosh_f32"},
    {"cosh_extremes", Op::Cosh, {fv({21}, kExtremes)}, {}, 9, "cosh_f32"},
    {"asinh", Op::Asinh, {fs({4099}, 100.f)}, {}, 9, "asinh_f32"},
    {"asinh_extremes", Op::Asinh, {fv({21}, kExtremes)}, {}, 9, "asinh_f32"},
    {"acosh", Op::Acosh, {fs({4099}, 100.f)}, {}, 9, "acosh_f32"},
    {"acosh_extremes", Op::Acosh, {fv({21}, kExtremes)}, {}, 9, "acosh_f32"},
    {"atanh", Op::Atanh, {fs({3, 41}, 0.5f)}, {}, 9, "atanh_f32"},
    {"atanh_extremes", Op::Atanh, {fv({21}, kExtremes)}, {}, 9, "atanh_f32"},
    {"selu", Op::Selu, {fs({3, 41}, 3.f)}, {}, 6, "selu_f32"},
    {"selu_extremes", Op::Selu, {fv({21}, kExtremes)}, {}, 6, "selu_f32"},
    {"celu", Op::Celu, {fs({3, 41}, 3.f)}, {{{"alpha", 0.5f}}}, 12, "celu_f32"},
    {"celu_extremes", Op::Celu, {fv({21}, kExtremes)}, {{{"alpha", 0.5f}}}, 12, "celu_f32"},
    {"softsign", Op::Softsign, {fs({3, 41}, 3.f)}, {}, 1, "softsign_f32"},
    {"softsign_extremes", Op::Softsign, {fv({21}, kExtremes)}, {}, 1, "softsign_f32"},
    {"thresholdedrelu", Op::ThresholdedRelu, {f({3, 41})}, {{{"alpha", 0.3f}}}, 10, "thresholdedrelu_f32"},
    {"thresholdedrelu_extremes", Op::ThresholdedRelu, {fv({21}, kExtremes)}, {{{"alpha", 0.3f}}}, 10, "thresholdedrelu_f32"},
    {"shrink", Op::Shrink, {f({3, 41})}, {{{"lambd", 0.7f}, {"bias", 0.2f}}}, 9, "shrink_f32"},
    {"shrink_extremes", Op::Shrink, {fv({21}, kExtremes)}, {{{"lambd", 0.7f}, {"bias", 0.2f}}}, 9, "shrink_f32"},
    {"min", Op::Min, {f({3, 41}), f({3, 41})}, {}, 13, "min_f32"},
    {"max_bcast", Op::Max, {f({4, 3, 41}), f({41})}, {}, 13, "max_bcast"},
    {"max_nan", Op::Max, {fv({4}, {NAN, 1, -INFINITY, 2}), fv({4}, {1, NAN, 0, INFINITY})}, {}, 13, "max_f32"},
    {"min_nan", Op::Min, {fv({4}, {NAN, 1, -INFINITY, 2}), fv({4}, {1, NAN, 0, INFINITY})}, {}, 13, "min_f32"},
    {"prelu_channel", Op::PRelu, {f({2, 8, 5, 5}), fc({8, 1, 1})}, {}, 16, "prelu_bcast"},
    {"identity", Op::Identity, {f({3, 41})}, {}, 14, "copy"},
    {"identity_i64", Op::Identity, {idx({9}, 100)}, {}, 14, "copy"},
    {"dropout", Op::Dropout, {f({3, 41})}, {}, 13, "copy"},
    // Binary, with the broadcasts MiniLM uses and odd ones.
    {"add_bias", Op::Add, {f({1, 128, 384}), fc({384})}, {}, 14, "add_bcast"},
    {"add_residual_b8", Op::Add, {f({8, 128, 384}), f({8, 128, 384})}, {}, 14, "add_f32"},
    {"sub_mean_b8", Op::Sub, {f({8, 128, 384}), f({8, 128, 1})}, {}, 14, "sub_bcast"},
    {"add_mask", Op::Add, {f({8, 12, 128, 128}), f({8, 1, 1, 128})}, {}, 14, "add_bcast"},
    {"add_mask_first", Op::Add, {f({2, 1, 1, 128}), f({2, 12, 128, 128})}, {}, 14, "add_bcast"},
    {"div_std", Op::Div, {f({1, 128, 384}), pos({1, 128, 1})}, {}, 14, "div_bcast"},
    {"div_scalar", Op::Div, {f({1, 12, 128, 128}), cf({}, {5.656854})}, {}, 14, "div_bcast"},
    {"mul_scalar_first", Op::Mul, {cf({}, {0.5}), f({1, 128, 1536})}, {}, 14, "mul_bcast"},
    {"sub_one_minus", Op::Sub, {cf({}, {1.0}), f({8, 1, 1, 128})}, {}, 14, "sub_bcast"},
    {"mul_outer", Op::Mul, {f({3, 1, 5}), f({1, 4, 1})}, {}, 14, "mul_bcast"},
    {"mul_tail", Op::Mul, {f({37}), f({37})}, {}, 14, "mul_f32"},
    {"add_mid", Op::Add, {f({2, 3, 4}), f({3, 1})}, {}, 14, "add_bcast"},
    {"div_big_bcast", Op::Div, {f({4, 100, 300}), pos({100, 1})}, {}, 14, "div_bcast"},
    {"pow_square", Op::Pow, {f({1, 128, 384}), cf({}, {2.0})}, {}, 14, "pow_square"},
    {"pow_square_i64", Op::Pow, {f({3, 37}), ci({}, {2})}, {}, 14, "pow_square"},
    {"pow_sqrt", Op::Pow, {pos({3, 37}), cf({1}, {0.5})}, {}, 14, "pow_sqrt"},
    {"pow_general", Op::Pow, {pos({3, 37}), cf({}, {1.7})}, {}, 14, "pow_scalar"},
    {"pow_tensor", Op::Pow, {pos({3, 37}), f({37})}, {}, 14, "pow_bcast"},
    // Softmax, reductions, LayerNormalization.
    {"softmax_attn", Op::Softmax, {f({1, 12, 128, 128})}, {{"axis", int64_t{-1}}}, 14, "softmax"},
    {"softmax_odd", Op::Softmax, {f({3, 37})}, {}, 14, "softmax"},
    {"softmax_opset11_last", Op::Softmax, {f({2, 3, 5})}, {{"axis", int64_t{2}}}, 11, "softmax"},
    {"reduce_mean_ln", Op::ReduceMean, {f({8, 128, 384})}, {{"axes", V{-1}}}, 14, "reduce_mean"},
    {"reduce_mean_odd", Op::ReduceMean, {f({3, 37})}, {{"axes", V{1}}, {"keepdims", int64_t{0}}}, 14, "reduce_mean"},
    {"reduce_mean_2axes", Op::ReduceMean, {f({2, 3, 5})}, {{"axes", V{1, 2}}}, 14, "reduce_mean"},
    {"reduce_mean_all", Op::ReduceMean, {f({2, 3, 5})}, {{"keepdims", int64_t{0}}}, 14, "reduce_mean"},
    {"reduce_sum_input_axes", Op::ReduceSum, {f({4, 6, 129}), ci({1}, {-1})}, {}, 13, "reduce_sum"},
    {"layernorm", Op::LayerNormalization, {f({1, 128, 384}), fc({384}), fc({384})}, {{"epsilon", 1e-12f}}, 17, "layernorm"},
    {"layernorm_nobias", Op::LayerNormalization, {f({3, 37}), fc({37})}, {}, 17, "layernorm"},
    {"layernorm_axis", Op::LayerNormalization, {f({2, 3, 5}), fc({3, 5}), fc({3, 5})}, {{"axis", int64_t{-2}}}, 17, "layernorm"},
    {"layernorm_stats", Op::LayerNormalization, {f({4, 50}), fc({50}), fc({50})}, {}, 17, "layernorm", 3},
    {"instancenorm", Op::InstanceNormalization, {f({2, 3, 8, 9}), fc({3}), fc({3})}, {{"epsilon", 1e-3f}}, 6, "instancenorm"},
    {"instancenorm_1d", Op::InstanceNormalization, {f({3, 5, 37}), fc({5}), fc({5})}, {}, 6, "instancenorm"},
    // Transpose and Gather.
    {"transpose_heads", Op::Transpose, {f({1, 128, 12, 32})}, {{"perm", V{0, 2, 1, 3}}}, 14, "transpose_rows"},
    {"transpose_keys_b8", Op::Transpose, {f({8, 128, 12, 32})}, {{"perm", V{0, 2, 3, 1}}}, 14, "transpose_tiled"},
    {"transpose_merge", Op::Transpose, {f({2, 12, 128, 32})}, {{"perm", V{0, 2, 1, 3}}}, 14, "transpose_rows"},
    {"transpose_default", Op::Transpose, {f({3, 5, 7})}, {}, 14, "transpose_tiled"},
    {"transpose_odd", Op::Transpose, {f({2, 3, 4, 5})}, {{"perm", V{3, 1, 0, 2}}}, 14, "transpose"},
    {"transpose_2d", Op::Transpose, {f({33, 17})}, {{"perm", V{1, 0}}}, 14, "transpose_tiled"},
    {"transpose_i64", Op::Transpose, {idx({4, 6}, 50)}, {{"perm", V{1, 0}}}, 14, "x64"},
    {"gather_embedding", Op::Gather, {fc({1000, 384}), idx({1, 128}, 1000)}, {}, 14, "gather_rows"},
    {"gather_3d_neg", Op::Gather, {fc({50, 3, 4}), idx_neg({2, 7}, 50)}, {}, 14, "gather_rows"},
    {"gather_i32", Op::Gather, {f({20, 5}), idx32({6}, 20)}, {}, 14, "gather_rows"},
    // An inner axis (a decoder's logit rows): one block per outer position and index.
    {"gather_axis1", Op::Gather, {f({2, 9, 7}), idx({4}, 9)}, {{"axis", int64_t{1}}}, 14, "gather_rows"},
    {"gather_last_axis_neg", Op::Gather, {f({3, 4, 6}), idx_neg({2, 2}, 6)}, {{"axis", int64_t{-1}}}, 14, "gather_rows"},
    // Expand as whole-block copies: grouped-query attention's kv repeat, a leading broadcast, a
    // lower-rank input, int64.
    {"expand_kv_repeat", Op::Expand, {f({2, 2, 1, 8, 16}), ci({5}, {2, 2, 4, 8, 16})}, {}, 13, "expand_blocks"},
    {"expand_outer_and_mid", Op::Expand, {f({1, 3, 1, 32}), ci({4}, {2, 3, 5, 32})}, {}, 13, "expand_blocks"},
    {"expand_lower_rank", Op::Expand, {f({6, 16}), ci({3}, {4, 6, 16})}, {}, 13, "expand_blocks"},
    {"expand_i64", Op::Expand, {idx({1, 4, 8}, 50), ci({3}, {3, 4, 8})}, {}, 13, "expand_blocks"},
    // ScatterND (no reduction): slices, single elements as in a causal mask, negative and repeated indices.
    {"scatter_nd_slices", Op::ScatterND, {f({6, 6, 5}), idx({7, 2}, 6), f({7, 5})}, {}, 16, "scatter_nd"},
    {"scatter_nd_elements_neg", Op::ScatterND, {f({4, 4, 4}), idx_neg({2, 10, 3}, 4), f({2, 10})}, {}, 16, "scatter_nd"},
    {"scatter_nd_i64_rows", Op::ScatterND, {idx({5, 5}, 100), idx({3, 1}, 5), idx({3, 5}, 100)}, {}, 13, "scatter_nd"},
    // Slice (rotary halves, windows, steps, negative and clamped bounds).
    {"slice_rotary_half", Op::Slice, {f({1, 8, 5, 64}), ci({1}, {32}), ci({1}, {1e18}), ci({1}, {-1})}, {}, 13, "slice_strided"},
    {"slice_first_half", Op::Slice, {f({1, 8, 5, 64}), ci({1}, {0}), ci({1}, {32}), ci({1}, {3})}, {}, 13, "slice_strided"},
    {"slice_two_axes_step", Op::Slice, {f({4, 9, 7}), ci({2}, {1, -1}), ci({2}, {9, -8}), ci({2}, {1, 2}), ci({2}, {2, -2})}, {}, 13, "slice_strided"},
    {"slice_rows_i64", Op::Slice, {idx({6, 5}, 50), ci({1}, {2}), ci({1}, {5})}, {}, 13, "x64"},
    {"slice_opset9_attrs", Op::Slice, {f({3, 10})}, {{"starts", V{1}}, {"ends", V{8}}, {"axes", V{1}}}, 9, "slice_strided"},
    // Concat and Split: YOLO's channel concats and halves, negative axes, zero-size parts, runs
    // longer than one copy segment (64 KiB), other dtypes.
    {"concat_channels_b8", Op::Concat, {f({8, 32, 20, 20}), f({8, 16, 20, 20}), f({8, 16, 20, 20})}, {{"axis", int64_t{1}}}, 13, "concat_rows_x32"},
    {"concat_long_rows", Op::Concat, {f({2, 40, 32, 32}), f({2, 8, 32, 32})}, {{"axis", int64_t{1}}}, 13, "concat_rows_x32"},
    {"concat_neg_axis", Op::Concat, {f({2, 3, 5}), f({2, 3, 4})}, {{"axis", int64_t{-1}}}, 13, "concat_rows"},
    {"concat_zero_part", Op::Concat, {f({2, 0, 4}), f({2, 3, 4})}, {{"axis", int64_t{1}}}, 13, "concat_rows"},
    {"concat_zero_rows", Op::Concat, {f({0, 2}), f({0, 3})}, {{"axis", int64_t{1}}}, 13, "concat_rows"},
    {"concat_axis0_i64", Op::Concat, {idx({2, 3}, 50), idx({1, 3}, 50)}, {{"axis", int64_t{0}}}, 13, "concat_rows_x64"},
    {"concat_u8", Op::Concat, {u8({3, 4}), u8({3, 2})}, {{"axis", int64_t{1}}}, 13, "concat_rows_x8"},
    {"split_halves_b8", Op::Split, {f({8, 64, 20, 20}), ci({2}, {32, 32})}, {{"axis", int64_t{1}}}, 13, "split_rows_x32", 2},
    {"split_long_rows", Op::Split, {f({2, 48, 32, 32}), ci({2}, {40, 8})}, {{"axis", int64_t{1}}}, 13, "split_rows_x32", 2},
    {"split_attr_opset11", Op::Split, {f({4, 10})}, {{"axis", int64_t{1}}, {"split", V{3, 7}}}, 11, "split_rows", 2},
    {"split_even_neg_axis", Op::Split, {f({2, 6, 9})}, {{"axis", int64_t{-1}}}, 13, "split_rows", 3},
    {"split_zero_part", Op::Split, {f({3, 5}), ci({2}, {0, 5})}, {{"axis", int64_t{1}}}, 13, "split_rows", 2},
    {"split_axis0_i64", Op::Split, {idx({6, 4}, 9)}, {}, 13, "split_rows_x64", 2},
    {"split_num_outputs", Op::Split, {f({2, 7})}, {{"axis", int64_t{1}}, {"num_outputs", int64_t{3}}}, 18, "split_rows", 3},
    // Resize nearest: YOLO's 2x (asymmetric, floor), every other coordinate mode and rounding,
    // downsampling, sizes, opset 10's scales input, Upsample, int64 data.
    {"resize_yolo_2x_b8", Op::Resize, {f({8, 64, 10, 10}), none(), cf({4}, {1, 1, 2, 2})},
     {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("floor")}}, 13, "resize_nearest_x32"},
    {"resize_half_pixel_mixed", Op::Resize, {f({1, 3, 7, 9}), none(), cf({4}, {1, 1, 1.7, 0.6})}, {{"mode", std::string("nearest")}}, 13, "resize_nearest"},
    {"resize_sizes_align_ceil", Op::Resize, {f({2, 3, 5, 4}), none(), none(), ci({4}, {2, 3, 9, 11})},
     {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("align_corners")}, {"nearest_mode", std::string("ceil")}}, 13, "resize_nearest"},
    {"resize_pytorch_round_ceil", Op::Resize, {f({1, 2, 6, 5}), none(), cf({4}, {1, 1, 0.5, 2.5})},
     {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}, {"nearest_mode", std::string("round_prefer_ceil")}}, 13, "resize_nearest"},
    {"resize_tf_half_pixel", Op::Resize, {f({1, 2, 5, 5}), none(), cf({4}, {1, 1, 1.5, 3})},
     {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("tf_half_pixel_for_nn")}}, 13, "resize_nearest"},
    {"resize_3d_i64", Op::Resize, {idx({2, 4, 6}, 50), none(), cf({3}, {1, 2, 0.5})}, {{"mode", std::string("nearest")}}, 13, "resize_nearest_x64"},
    {"resize_zero_batch", Op::Resize, {f({0, 2, 3, 3}), none(), cf({4}, {1, 1, 2, 2})}, {{"mode", std::string("nearest")}}, 13, "resize_nearest"},
    {"resize_opset10", Op::Resize, {f({1, 2, 3, 4}), cf({4}, {1, 1, 2, 3})}, {{"mode", std::string("nearest")}}, 10, "resize_nearest"},
    {"upsample_opset9", Op::Upsample, {f({1, 2, 3, 3}), cf({4}, {1, 1, 2, 2})}, {{"mode", std::string("nearest")}}, 9, "resize_nearest"},
};

Tensor make_input(const In& in, std::mt19937& rng) {
  Tensor t(in.dtype, in.dims);
  const int64_t n = t.numel();
  if (in.gen == Gen::Values) {
    for (int64_t i = 0; i < n; ++i) {
      const double v = in.values[static_cast<size_t>(i)];
      if (in.dtype == DType::Float32) t.data<float>()[i] = static_cast<float>(v);
      else if (in.dtype == DType::Int64) t.data<int64_t>()[i] = static_cast<int64_t>(v);
      else ref::store_integer(t, i, v);
    }
    return t;
  }
  if (in.gen == Gen::Index) {
    const int64_t lo = in.range < 0 ? in.range : 0, hi = in.range < 0 ? -in.range : in.range;
    std::uniform_int_distribution<int64_t> u(lo, hi - 1);
    for (int64_t i = 0; i < n; ++i) {
      if (in.dtype == DType::Int64) t.data<int64_t>()[i] = u(rng);
      else if (in.dtype == DType::Int32) t.data<int32_t>()[i] = static_cast<int32_t>(u(rng));
      else ref::store_integer(t, i, static_cast<double>(u(rng)));
    }
    return t;
  }
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> positive(0.1f, 3.f);
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = in.gen == Gen::Positive ? positive(rng) : in.scale * normal(rng);
  return t;
}

class CpuTwin : public ::testing::TestWithParam<Case> {};

TEST_P(CpuTwin, MatchesReference) {
  const Case& c = GetParam();
  Node node;
  node.name = c.name;
  node.op = c.op;
  node.op_type = op_info(c.op).name;
  node.opset = c.opset;
  node.attrs = c.attrs;
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
  std::vector<Tensor> inputs;
  std::vector<TensorType> in_types;
  std::vector<const Tensor*> consts;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const In& in = c.inputs[i];
    node.inputs.push_back(in.omitted ? -1 : static_cast<int>(i));
    inputs.push_back(in.omitted ? Tensor() : make_input(in, rng));
    in_types.push_back(in.omitted ? TensorType{} : TensorType{in.dtype, in.dims});
  }
  for (size_t i = 0; i < c.inputs.size(); ++i) consts.push_back(c.inputs[i].constant ? &inputs[i] : nullptr);
  for (size_t o = 0; o < c.outputs; ++o) node.outputs.push_back(static_cast<int>(c.inputs.size() + o));

  InferContext ctx{node, in_types, consts, ref::evaluate};
  std::vector<TensorType> out_types = op_info(c.op).infer(ctx);
  out_types.resize(c.outputs);
  std::unique_ptr<Kernel> fast = cpu::backend().select(KernelRequest{node, in_types, consts, out_types}).kernel;
  if (c.needs_vnni && !cpu::onednn_int8_has_vnni()) {
    EXPECT_EQ(fast, nullptr) << "without VNNI, " << c.name << " was given kernel " << fast->name();
    return;
  }
  ASSERT_NE(fast, nullptr) << "no fast kernel selected for " << c.name;
  // expect_kernel: what the name contains, or alternatives "a|b" where the CPU decides.
  const std::string expected = c.expect_kernel;
  bool named = false;
  for (size_t at = 0; at != std::string::npos;) {
    const size_t bar = expected.find('|', at);
    named |= fast->name().find(expected.substr(at, bar == std::string::npos ? bar : bar - at)) != std::string::npos;
    at = bar == std::string::npos ? bar : bar + 1;
  }
  EXPECT_TRUE(named) << "kernel " << fast->name() << " does not contain '" << c.expect_kernel << "'";

  std::vector<Tensor> got, want;
  for (const auto& t : out_types) {
    got.emplace_back(t.dtype, t.dims);
    want.emplace_back(t.dtype, t.dims);
  }
  Tensor scratch(DType::UInt8, {static_cast<int64_t>(fast->scratch_bytes())});
  std::span<std::byte> scratch_span(static_cast<std::byte*>(scratch.raw()), scratch.nbytes());
  fast->run(inputs, got, scratch_span);
  fast->run(inputs, got, scratch_span);  // a second run must give the same (kernels keep no per-run state)
  ref::evaluate(node, inputs, want);

  EXPECT_TRUE(test::outputs_agree(got, want)) << c.name << " (" << fast->name() << ")";
  RecordProperty("kernel", fast->name());
}

INSTANTIATE_TEST_SUITE_P(Table, CpuTwin, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Erf, Sin and Cos stay within [-1, 1] on a dense grid: the fast approximations reached
// 1.0000002, so sqrt(1 - erf(x)) and asin(sin(x)) were NaN where ONNX Runtime's are not.
TEST(CpuUnary, ErfSinAndCosStayWithinOne) {
  constexpr int64_t kCount = 1 << 20;
  for (auto [op, span] : std::vector<std::pair<Op, float>>{{Op::Erf, 6.f}, {Op::Sin, 40.f}, {Op::Cos, 40.f}}) {
    Node node;
    node.name = "n";
    node.op = op;
    node.op_type = op_info(op).name;
    node.opset = 13;
    node.inputs = {0};
    node.outputs = {1};
    const std::vector<TensorType> types = {{DType::Float32, {kCount}}};
    const std::vector<const Tensor*> consts = {nullptr};
    std::unique_ptr<Kernel> fast = cpu::backend().select(KernelRequest{node, types, consts, types}).kernel;
    ASSERT_NE(fast, nullptr) << op_info(op).name;
    std::vector<Tensor> x, y;
    x.emplace_back(DType::Float32, Dims{kCount});
    y.emplace_back(DType::Float32, Dims{kCount});
    for (int64_t i = 0; i < kCount; ++i) x[0].data<float>()[i] = -span + 2 * span * static_cast<float>(i) / kCount;
    std::vector<std::byte> scratch(fast->scratch_bytes());
    fast->run(x, y, scratch);
    const float* out = y[0].data<float>();
    for (int64_t i = 0; i < kCount; ++i)
      ASSERT_LE(std::abs(out[i]), 1.f) << op_info(op).name << "(" << x[0].data<float>()[i] << ") = " << out[i];
  }
}

// Nodes outside what the fast kernels handle must be declined (the reference runs), never run wrongly.
TEST(CpuSelect, FallsBackOutsideSupportedCases) {
  auto select = [](Op op, std::vector<TensorType> ins, std::vector<TensorType> outs, Attrs attrs = {},
                   int opset = 14) {
    Node n;
    n.name = "n";
    n.op = op;
    n.op_type = op_info(op).name;
    n.opset = opset;
    n.attrs = std::move(attrs);
    for (size_t i = 0; i < ins.size(); ++i) n.inputs.push_back(static_cast<int>(i));
    n.outputs.push_back(static_cast<int>(ins.size()));
    std::vector<const Tensor*> consts(ins.size(), nullptr);
    return cpu::backend().select(KernelRequest{n, ins, consts, outs}).kernel != nullptr;
  };
  const TensorType f3{DType::Float32, {2, 3, 5}};
  EXPECT_FALSE(select(Op::Softmax, {f3}, {f3}, {{"axis", int64_t{1}}}));
  EXPECT_FALSE(select(Op::Softmax, {f3}, {f3}, {}, 11));  // default axis 1 at opset < 13
  EXPECT_FALSE(select(Op::ReduceMean, {f3}, {{DType::Float32, {2, 1, 5}}}, {{"axes", V{1}}}));
  EXPECT_FALSE(select(Op::Add, {{DType::Int64, {3}}, {DType::Int64, {3}}}, {{DType::Int64, {3}}}));
  EXPECT_FALSE(select(Op::Relu, {{DType::Float64, {3}}}, {{DType::Float64, {3}}}));
  EXPECT_FALSE(select(Op::Conv, {{DType::Float32, {1, 3, 8, 8}}, {DType::Float32, {4, 3, 3, 3}}},
                      {{DType::Float32, {1, 4, 6, 6}}}));  // runtime weights
  EXPECT_FALSE(select(Op::ConvTranspose, {{DType::Float32, {1, 3, 4, 4}}, {DType::Float32, {3, 2, 3, 3}}},
                      {{DType::Float32, {1, 2, 6, 6}}}));  // runtime weights
  EXPECT_FALSE(select(Op::Gemm, {{DType::Float32, {2, 3}}, {DType::Float32, {3, 4}}, {DType::Float32, {2, 4}}},
                      {{DType::Float32, {2, 4}}}, {{"beta", 0.5f}}, 13));  // runtime C with beta != 1
  EXPECT_FALSE(select(Op::Reshape, {f3, {DType::Int64, {1}}}, {{DType::Float32, {30}}}));
  EXPECT_FALSE(select(Op::Resize, {{DType::Float32, {1, 1, 2, 2}}, {}, {DType::Float32, {4}}},
                      {{DType::Float32, {1, 1, 4, 4}}}, {{"mode", std::string("nearest")}}, 13));  // runtime scales
  EXPECT_FALSE(select(Op::Concat, {f3, {DType::Int64, {2, 3, 5}}}, {{DType::Float32, {4, 3, 5}}}, {{"axis", int64_t{0}}}));  // mixed dtypes
  EXPECT_FALSE(select(Op::Expand, {{DType::Float32, {4, 1}}, {DType::Int64, {2}}}, {{DType::Float32, {4, 8}}}));  // 4-byte blocks
  EXPECT_FALSE(select(Op::ScatterND, {f3, {DType::Int64, {2, 1}}, {DType::Float32, {2, 3, 5}}}, {f3},
                      {{"reduction", std::string("add")}}, 16));  // a reduction: the reference
}

// The fast ScatterND checks every index before it writes: one out of range is a one-line error
// naming the node, and the output keeps none of the earlier updates.
TEST(CpuScatterNd, AnIndexOutOfRangeIsAnErrorBeforeAnyWrite) {
  Node n;
  n.name = "mask_update";
  n.op = Op::ScatterND;
  n.op_type = "ScatterND";
  n.opset = 16;
  n.inputs = {0, 1, 2};
  n.outputs = {3};
  const TensorType data{DType::Float32, {4, 3}}, indices{DType::Int64, {2, 1}}, updates{DType::Float32, {2, 3}};
  const std::vector<TensorType> ins = {data, indices, updates}, outs = {data};
  const std::vector<const Tensor*> consts(3, nullptr);
  auto kernel = cpu::backend().select(KernelRequest{n, ins, consts, outs}).kernel;
  ASSERT_NE(kernel, nullptr);
  std::vector<Tensor> in = {Tensor(DType::Float32, {4, 3}), Tensor(DType::Int64, {2, 1}), Tensor(DType::Float32, {2, 3})};
  std::fill_n(in[0].data<float>(), 12, 1.f);
  std::fill_n(in[2].data<float>(), 6, 7.f);
  in[1].data<int64_t>()[0] = 1;
  in[1].data<int64_t>()[1] = 4;  // rows are 0..3 (or -4..-1)
  std::vector<Tensor> out = {Tensor(DType::Float32, {4, 3})};
  std::fill_n(out[0].data<float>(), 12, 0.f);
  try {
    kernel->run(in, out, {});
    FAIL() << "index 4 of 4 rows was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("index 4 is out of range for axis 0 of size 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mask_update"), std::string::npos) << e.what();
  }
  EXPECT_EQ(out[0].data<float>()[3], 0.f) << "row 1 was written before the bad index was found";
}

}  // namespace
}  // namespace fusor
