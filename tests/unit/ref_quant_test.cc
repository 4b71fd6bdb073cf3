// Hand-checked cases for the quantization family: float8 conversions, int4 packing in ONNX
// tensors, QuantizeLinear/DequantizeLinear layouts, rounding and saturation, the integer
// MatMul and Conv ops, and the one-line errors on inconsistent scales and zero points.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "ir/float8.h"
#include "ir/mx_formats.h"
#include "onnx/subbyte_packing.h"
#include "onnx/tensor_proto.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

template <class T>
Tensor typed(DType t, Dims dims, std::vector<int> v) {
  Tensor out(t, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) static_cast<T*>(out.raw())[i] = static_cast<T>(v[i]);
  return out;
}
std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_as_double(i));
  return v;
}

constexpr DType kFloat8[] = {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2, DType::Float8E5M2FNUZ};

TEST(Float8, MaxValuesOfEachVariant) {
  const float max[] = {448, 240, 57344, 57344};
  const uint8_t bits[] = {0x7E, 0x7F, 0x7B, 0x7F};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(float_to_float8(max[k], kFloat8[k], false), bits[k]) << dtype_name(kFloat8[k]);
    EXPECT_EQ(float8_to_float(bits[k], kFloat8[k]), max[k]);
    EXPECT_EQ(float8_to_float(static_cast<uint8_t>(bits[k] | 0x80), kFloat8[k]), -max[k]);
  }
}

TEST(Float8, EveryFinitePatternRoundTrips) {
  for (DType t : kFloat8)
    for (int b = 0; b < 256; ++b) {
      float v = float8_to_float(static_cast<uint8_t>(b), t);
      if (std::isnan(v) || std::isinf(v)) continue;
      EXPECT_EQ(float_to_float8(v, t, false), b) << dtype_name(t) << " pattern " << b;
    }
}

TEST(Float8, NaNInfAndNegativeZero) {
  const float nan = std::nanf(""), inf = INFINITY;
  EXPECT_EQ(float_to_float8(nan, DType::Float8E4M3FN, true), 0x7F);
  EXPECT_EQ(float_to_float8(-nan, DType::Float8E4M3FN, true), 0xFF);
  EXPECT_EQ(float_to_float8(nan, DType::Float8E4M3FNUZ, true), 0x80);
  EXPECT_EQ(float_to_float8(nan, DType::Float8E5M2FNUZ, true), 0x80);
  EXPECT_TRUE(std::isnan(float8_to_float(0xFF, DType::Float8E4M3FN)));
  EXPECT_TRUE(std::isnan(float8_to_float(0x7D, DType::Float8E5M2)));
  EXPECT_TRUE(std::isnan(float8_to_float(0x80, DType::Float8E4M3FNUZ)));
  EXPECT_EQ(float8_to_float(0x7C, DType::Float8E5M2), inf);
  EXPECT_EQ(float8_to_float(0xFC, DType::Float8E5M2), -inf);
  // -0 exists in FN and E5M2, not in the UZ variants.
  EXPECT_EQ(float_to_float8(-0.0f, DType::Float8E4M3FN, true), 0x80);
  EXPECT_EQ(float_to_float8(-0.0f, DType::Float8E5M2FNUZ, true), 0x00);
  EXPECT_EQ(float_to_float8(-1e-9f, DType::Float8E4M3FNUZ, true), 0x00);
}

TEST(Float8, SaturateOnAndOff) {
  // Saturating: anything past max, inf included, becomes +-max.
  EXPECT_EQ(float_to_float8(1e6f, DType::Float8E4M3FN, true), 0x7E);
  EXPECT_EQ(float_to_float8(-INFINITY, DType::Float8E4M3FN, true), 0xFE);
  EXPECT_EQ(float_to_float8(INFINITY, DType::Float8E5M2, true), 0x7B);
  EXPECT_EQ(float_to_float8(1e6f, DType::Float8E4M3FNUZ, true), 0x7F);
  // Not saturating: NaN, or inf for E5M2.
  EXPECT_EQ(float_to_float8(1e6f, DType::Float8E4M3FN, false), 0x7F);
  EXPECT_EQ(float_to_float8(-1e6f, DType::Float8E5M2, false), 0xFC);
  EXPECT_EQ(float_to_float8(INFINITY, DType::Float8E5M2, false), 0x7C);
  EXPECT_EQ(float_to_float8(1e6f, DType::Float8E5M2FNUZ, false), 0x80);
  // 464 is halfway between 448 and 480 (not representable): ties to even stays at 448.
  EXPECT_EQ(float_to_float8(464.0f, DType::Float8E4M3FN, false), 0x7E);
  EXPECT_EQ(float_to_float8(465.0f, DType::Float8E4M3FN, false), 0x7F);
}

TEST(Float8, RoundsHalfToEvenIncludingSubnormals) {
  // Between 1 (mantissa 000) and 1.125 (001): the tie goes to 1; between 1.125 and 1.25: to 1.25.
  EXPECT_EQ(float8_to_float(float_to_float8(1.0625f, DType::Float8E4M3FN, true), DType::Float8E4M3FN), 1.0f);
  EXPECT_EQ(float8_to_float(float_to_float8(1.1875f, DType::Float8E4M3FN, true), DType::Float8E4M3FN), 1.25f);
  // E4M3FN's smallest subnormal is 2^-9; half of it ties to 0, a bit more rounds up to it.
  EXPECT_EQ(float_to_float8(std::ldexp(1.0f, -9), DType::Float8E4M3FN, true), 0x01);
  EXPECT_EQ(float_to_float8(std::ldexp(1.0f, -10), DType::Float8E4M3FN, true), 0x00);
  EXPECT_EQ(float_to_float8(std::ldexp(1.1f, -10), DType::Float8E4M3FN, true), 0x01);
  // The largest subnormal (7 * 2^-9) rounding up lands on the smallest normal, 2^-6.
  EXPECT_EQ(float_to_float8(std::ldexp(7.9f, -9), DType::Float8E4M3FN, true), 0x08);
}

TEST(Int4Packing, RoundTripWithOddCounts) {
  const std::vector<uint8_t> s = {0xF8, 0xFF, 0x00, 0x07, 0x03};  // -8, -1, 0, 7, 3
  std::string packed = pack_bits(s.data(), 5, 4);
  ASSERT_EQ(packed.size(), 3u);
  EXPECT_EQ(static_cast<uint8_t>(packed[0]), 0xF8);  // first element in the low nibble
  EXPECT_EQ(static_cast<uint8_t>(packed[2]), 0x03);  // the odd one leaves the high nibble 0
  std::vector<uint8_t> back(5);
  unpack_bits(reinterpret_cast<const uint8_t*>(packed.data()), 5, 4, true, back.data());
  EXPECT_EQ(back, s);
  unpack_bits(reinterpret_cast<const uint8_t*>(packed.data()), 5, 4, false, back.data());
  EXPECT_EQ(back, (std::vector<uint8_t>{8, 15, 0, 7, 3}));
}

TEST(SubbytePacking, TwoBitTypesPackFourToAByte) {
  const std::vector<uint8_t> s = {0xFE, 0x01, 0xFF, 0x00, 0x01};  // int2: -2, 1, -1, 0, 1
  std::string packed = pack_bits(s.data(), 5, 2);
  ASSERT_EQ(packed.size(), 2u);
  EXPECT_EQ(static_cast<uint8_t>(packed[0]), 0x36);  // 10 01 11 00, the first in the lowest bits
  EXPECT_EQ(static_cast<uint8_t>(packed[1]), 0x01);
  std::vector<uint8_t> back(5);
  unpack_bits(reinterpret_cast<const uint8_t*>(packed.data()), 5, 2, true, back.data());
  EXPECT_EQ(back, s);
  unpack_bits(reinterpret_cast<const uint8_t*>(packed.data()), 5, 2, false, back.data());
  EXPECT_EQ(back, (std::vector<uint8_t>{2, 1, 3, 0, 1}));
  for (DType t : {DType::Int2, DType::UInt2, DType::Float4E2M1}) {
    Tensor x = t == DType::Int2 ? typed<int8_t>(t, {5}, {-2, 1, -1, 0, 1}) : typed<uint8_t>(t, {5}, {3, 0, 2, 1, 3});
    onnx::TensorProto p;
    tensor_to_proto(x, p);
    EXPECT_EQ(p.raw_data().size(), t == DType::Float4E2M1 ? 3u : 2u);
    EXPECT_EQ(doubles(tensor_from_proto(p, "")), doubles(x));
  }
}

TEST(MxFormats, Float4E2M1RoundsToNearestEvenAndSaturates) {
  // Ties go to the even code: 0.25 -> 0, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
  const std::vector<std::pair<float, float>> cases = {
      {0.25f, 0.0f}, {0.26f, 0.5f}, {1.25f, 1.0f}, {1.75f, 2.0f}, {2.5f, 2.0f}, {3.5f, 4.0f},
      {5.0f, 4.0f},  {5.5f, 6.0f},  {7.0f, 6.0f},  {1e6f, 6.0f}, {-7.0f, -6.0f}, {-0.1f, -0.0f}};
  for (auto [x, want] : cases) {
    const float got = float4e2m1_to_float(float_to_float4e2m1(x));
    EXPECT_EQ(got, want) << x;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << x;
  }
  EXPECT_EQ(float_to_float4e2m1(std::numeric_limits<float>::infinity()), 0x7);
  EXPECT_EQ(float_to_float4e2m1(std::numeric_limits<float>::quiet_NaN()), 0x8);  // -0, as ml_dtypes
}

TEST(MxFormats, Float8E8M0KeepsTheExponentRoundedByMode) {
  EXPECT_EQ(float_to_float8e8m0(1.0f, E8M0Rounding::Up, true), 127);
  EXPECT_EQ(float_to_float8e8m0(1.1f, E8M0Rounding::Up, true), 128);       // any mantissa rounds up
  EXPECT_EQ(float_to_float8e8m0(1.9f, E8M0Rounding::Down, true), 127);
  EXPECT_EQ(float_to_float8e8m0(1.4f, E8M0Rounding::Nearest, true), 127);
  EXPECT_EQ(float_to_float8e8m0(1.5f, E8M0Rounding::Nearest, true), 128);  // ties round up
  EXPECT_EQ(float_to_float8e8m0(std::ldexp(1.5f, 127), E8M0Rounding::Up, true), 254);   // saturates
  EXPECT_EQ(float_to_float8e8m0(std::ldexp(1.5f, 127), E8M0Rounding::Up, false), 255);  // NaN
  EXPECT_EQ(float_to_float8e8m0(std::numeric_limits<float>::infinity(), E8M0Rounding::Up, true), 255);
  EXPECT_EQ(float8e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(float8e8m0_to_float(255)));
}

TEST(RefQuant, CastToNarrowIntegersTruncatesAndWraps) {
  const Tensor x = make({7}, {-9, -3, -2.5f, 1.7f, 3, 8, NAN});
  for (auto [t, want] : {std::pair{DType::Int4, std::vector<double>{7, -3, -2, 1, 3, -8, 0}},
                         std::pair{DType::UInt4, std::vector<double>{7, 13, 14, 1, 3, 8, 0}},
                         std::pair{DType::Int2, std::vector<double>{-1, 1, -2, 1, -1, 0, 0}},
                         std::pair{DType::UInt2, std::vector<double>{3, 1, 2, 1, 3, 0, 0}}}) {
    auto y = run(node_of(Op::Cast, 25, {{"to", t}}), {x});
    EXPECT_EQ(y[0].dtype(), t);
    EXPECT_EQ(doubles(y[0]), want) << dtype_name(t);
  }
}

TEST(Int4Packing, TensorProtoRoundTripAndSizeCheck) {
  for (DType t : {DType::Int4, DType::UInt4}) {
    Tensor x = t == DType::Int4 ? typed<int8_t>(t, {3, 1}, {-8, 7, -3}) : typed<uint8_t>(t, {3, 1}, {15, 0, 9});
    onnx::TensorProto p;
    tensor_to_proto(x, p);
    EXPECT_EQ(p.raw_data().size(), 2u);
    Tensor back = tensor_from_proto(p, "");
    EXPECT_EQ(back.dtype(), t);
    EXPECT_EQ(doubles(back), doubles(x));
    p.set_raw_data(std::string(3, '\0'));
    EXPECT_THROW(tensor_from_proto(p, ""), Error);
  }
  // int32_data holds one packed byte per entry.
  onnx::TensorProto p;
  p.set_data_type(22);  // INT4
  p.add_dims(3);
  p.add_int32_data(0x9F);  // -1, -7
  p.add_int32_data(0x05);
  EXPECT_EQ(doubles(tensor_from_proto(p, "")), (std::vector<double>{-1, -7, 5}));
}

TEST(Float8, TensorProtoRoundTrip) {
  Tensor x = typed<uint8_t>(DType::Float8E5M2, {2}, {0x3C, 0xFB});
  onnx::TensorProto p;
  tensor_to_proto(x, p);
  EXPECT_EQ(p.data_type(), 19);  // FLOAT8E5M2
  EXPECT_EQ(doubles(tensor_from_proto(p, "")), (std::vector<double>{1.0, -57344.0}));
}

TEST(RefQuant, QuantizeRoundsHalfToEvenAndSaturates) {
  auto y = run(node_of(Op::QuantizeLinear, 13),
               {make({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f}), make({}, {1.0f}),
                typed<int8_t>(DType::Int8, {}, {0})});
  EXPECT_EQ(y[0].dtype(), DType::Int8);
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{0, 2, 2, 0, -2, 127, -128}));
  // No zero point: uint8 with zero point 0.
  auto u = run(node_of(Op::QuantizeLinear, 13), {make({3}, {-5.0f, 5.0f, 1e4f}), make({}, {2.0f})});
  EXPECT_EQ(u[0].dtype(), DType::UInt8);
  EXPECT_EQ(doubles(u[0]), (std::vector<double>{0, 2, 255}));
}

TEST(RefQuant, QuantizePerAxisWithZeroPoints) {
  // x [2, 3], axis 1: one scale and zero point per column.
  auto y = run(node_of(Op::QuantizeLinear, 13, {{"axis", int64_t{1}}}),
               {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({3}, {1, 2, 4}), typed<uint8_t>(DType::UInt8, {3}, {10, 20, 30})});
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{11, 21, 31, 14, 22, 32}));
}

TEST(RefQuant, BlockedQuantizeToInt4WithShortLastBlock) {
  // x [1, 5] blocked along axis 1 by 2: blocks {0,1}, {2,3}, {4}.
  auto n = node_of(Op::QuantizeLinear, 21, {{"axis", int64_t{1}}, {"block_size", int64_t{2}}});
  auto y = run(n, {make({1, 5}, {2, 4, 9, -9, 100}), make({1, 3}, {2, 3, 1}), typed<int8_t>(DType::Int4, {1, 3}, {0, 1, -1})});
  EXPECT_EQ(y[0].dtype(), DType::Int4);
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{1, 2, 4, -2, 7}));
  auto d = run(node_of(Op::DequantizeLinear, 21, {{"axis", int64_t{1}}, {"block_size", int64_t{2}}}),
               {y[0], make({1, 3}, {2, 3, 1}), typed<int8_t>(DType::Int4, {1, 3}, {0, 1, -1})});
  EXPECT_EQ(doubles(d[0]), (std::vector<double>{2, 4, 9, -9, 8}));
}

TEST(RefQuant, QuantizeToFloat8FollowsSaturate) {
  auto sat = run(node_of(Op::QuantizeLinear, 19, {{"saturate", int64_t{1}}}),
                 {make({2}, {1000.0f, -0.0f}), make({}, {1.0f}), typed<uint8_t>(DType::Float8E4M3FN, {}, {0})});
  EXPECT_EQ(sat[0].dtype(), DType::Float8E4M3FN);
  EXPECT_EQ(static_cast<const uint8_t*>(sat[0].raw())[0], 0x7E);
  EXPECT_EQ(static_cast<const uint8_t*>(sat[0].raw())[1], 0x80);  // -0 kept
  auto nosat = run(node_of(Op::QuantizeLinear, 21, {{"saturate", int64_t{0}}, {"output_dtype", DType::Float8E4M3FN}}),
                   {make({1}, {1000.0f}), make({}, {1.0f})});
  EXPECT_TRUE(std::isnan(nosat[0].scalar_as_double(0)));
}

TEST(RefQuant, DequantizePerAxisAndFloat8) {
  auto y = run(node_of(Op::DequantizeLinear, 13, {{"axis", int64_t{0}}}),
               {typed<uint8_t>(DType::UInt8, {2, 2}, {10, 20, 30, 40}), make({2}, {0.5f, 2.0f}),
                typed<uint8_t>(DType::UInt8, {2}, {10, 0})});
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{0, 5, 60, 80}));
  auto f = run(node_of(Op::DequantizeLinear, 19), {typed<uint8_t>(DType::Float8E4M3FN, {2}, {0x38, 0xC0}), make({}, {2.0f})});
  EXPECT_EQ(doubles(f[0]), (std::vector<double>{2, -4}));
}

TEST(RefQuant, DynamicQuantizeKeepsZeroInRange) {
  auto y = run(node_of(Op::DynamicQuantizeLinear, 11, {}, 3), {make({4}, {1, 2, 3, 5.1f})});
  // Range [0, 5.1]: scale 0.02, zero point 0.
  EXPECT_FLOAT_EQ(y[1].data<float>()[0], 5.1f / 255.0f);
  EXPECT_EQ(y[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{50, 100, 150, 255}));
}

TEST(RefQuant, MatMulIntegerPerRowZeroPoint) {
  auto y = run(node_of(Op::MatMulInteger, 10),
               {typed<uint8_t>(DType::UInt8, {2, 2}, {11, 12, 23, 24}), typed<uint8_t>(DType::UInt8, {2, 1}, {1, 2}),
                typed<uint8_t>(DType::UInt8, {2}, {10, 20})});
  EXPECT_EQ(y[0].dtype(), DType::Int32);
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{1 * 1 + 2 * 2, 3 * 1 + 4 * 2}));
}

TEST(RefQuant, ConvIntegerPadsWithTheZeroPoint) {
  // 1x1x2x2 input with zero point 1, 1x1x2x2 ones kernel, pads 1: every output sums (x - 1).
  auto y = run(node_of(Op::ConvInteger, 10, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}),
               {typed<uint8_t>(DType::UInt8, {1, 1, 2, 2}, {2, 3, 4, 5}), typed<uint8_t>(DType::UInt8, {1, 1, 2, 2}, {1, 1, 1, 1}),
                typed<uint8_t>(DType::UInt8, {}, {1})});
  EXPECT_EQ(y[0].dims(), (Dims{1, 1, 3, 3}));
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
}

TEST(RefQuant, QLinearMatMulSaturatesLikeTheSpecAndOnnxRuntime) {
  // 2*100 + 3*100 = 500 does not fit uint8: y = saturate(...) is 255, as ONNX Runtime gives.
  // onnx.reference (and the int8 node tests made with it) wraps it to 244.
  auto y = run(node_of(Op::QLinearMatMul, 10),
               {typed<uint8_t>(DType::UInt8, {1, 2}, {2, 3}), make({}, {1}), typed<uint8_t>(DType::UInt8, {}, {0}),
                typed<uint8_t>(DType::UInt8, {2, 1}, {100, 100}), make({}, {1}), typed<uint8_t>(DType::UInt8, {}, {0}),
                make({}, {1}), typed<uint8_t>(DType::UInt8, {}, {0})});
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{255}));
}

TEST(RefQuant, QLinearConvPerChannelScaleBiasAndSaturation) {
  // x - 2 = 8; channel 0: (8*3 + 4) * 0.5 + 100 = 114; channel 1: 8*-4 * 0.5*100 + 100 < 0 saturates to 0.
  Tensor bias(DType::Int32, {2});
  bias.data<int32_t>()[0] = 4;
  auto y = run(node_of(Op::QLinearConv, 10),
               {typed<uint8_t>(DType::UInt8, {1, 1, 1, 1}, {10}), make({}, {0.5f}), typed<uint8_t>(DType::UInt8, {}, {2}),
                typed<int8_t>(DType::Int8, {2, 1, 1, 1}, {3, -4}), make({2}, {1, 100}), typed<int8_t>(DType::Int8, {2}, {0, 0}),
                make({}, {1}), typed<uint8_t>(DType::UInt8, {}, {100}), bias});
  EXPECT_EQ(y[0].dims(), (Dims{1, 2, 1, 1}));
  EXPECT_EQ(doubles(y[0]), (std::vector<double>{114, 0}));
}

TEST(RefQuant, BadScalesAndZeroPointsGiveOneLineErrors) {
  auto q = node_of(Op::QuantizeLinear, 13, {{"axis", int64_t{1}}});
  EXPECT_NE(error_of(q, {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({2}, {1, 1})}).find("scale [2]"), std::string::npos);
  EXPECT_NE(error_of(q, {make({2, 3}, {1, 2, 3, 4, 5, 6}), make({3}, {1, 1, 1}), typed<uint8_t>(DType::UInt8, {2}, {0, 0})})
                .find("differ in shape"),
            std::string::npos);
  auto blocked = node_of(Op::QuantizeLinear, 21, {{"axis", int64_t{1}}, {"block_size", int64_t{2}}});
  EXPECT_NE(error_of(blocked, {make({1, 5}, {1, 2, 3, 4, 5}), make({1, 2}, {1, 1})}).find("must be [1, 3]"),
            std::string::npos);
  auto negative = node_of(Op::QuantizeLinear, 21, {{"block_size", int64_t{-1}}});
  EXPECT_NE(error_of(negative, {make({2}, {1, 2}), make({}, {1})}).find("block_size"), std::string::npos);
  auto mismatch = node_of(Op::QuantizeLinear, 21, {{"output_dtype", DType::Int8}});
  EXPECT_NE(error_of(mismatch, {make({1}, {1}), make({}, {1}), typed<uint8_t>(DType::UInt8, {}, {0})}).find("output_dtype"),
            std::string::npos);
  EXPECT_NE(error_of(node_of(Op::DequantizeLinear, 19),
                     {typed<uint8_t>(DType::Float8E4M3FN, {1}, {0x38}), make({}, {1}),
                      typed<uint8_t>(DType::Float8E4M3FN, {}, {0x38})})
                .find("must be zero"),
            std::string::npos);
  // A per-channel w_scale must have one value per output channel.
  EXPECT_NE(error_of(node_of(Op::QLinearConv, 10),
                     {typed<uint8_t>(DType::UInt8, {1, 1, 1, 1}, {1}), make({}, {1}), Tensor(),
                      typed<int8_t>(DType::Int8, {2, 1, 1, 1}, {1, 1}), make({3}, {1, 1, 1}), Tensor(), make({}, {1})})
                .find("w_scale must be a scalar or a vector of 2"),
            std::string::npos);
}

}  // namespace
}  // namespace fusor
