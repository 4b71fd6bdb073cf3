// The storage dtypes (float16, bfloat16) and the integer types beside them: conversions with
// their rounding edge cases, Cast, ONNX TensorProto and .npy round trips, and models with float16
// values computed in float32 by the storage-types pass against the same model in float32.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "fusor/npy.h"
#include "fused_vs_reference.h"
#include "graph_builder.h"
#include "ir/half.h"
#include "kernels/ref/cast.h"
#include "kernels/ref/reference.h"
#include "onnx/tensor_proto.h"
#include "passes/storage_types.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using test::bits16;
using test::kNewTypes;

// A tensor of `t` whose bytes are a pattern, every byte used.
Tensor patterned(DType t, Dims dims) {
  Tensor a(t, std::move(dims));
  auto* bytes = static_cast<uint8_t*>(a.raw());
  for (size_t i = 0; i < a.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  return a;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

Tensor half_tensor(DType t, const std::vector<float>& v) {
  Tensor out(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    bits16(out)[i] = t == DType::Float16 ? float_to_half(v[i]) : float_to_bfloat16(v[i]);
  return out;
}

TEST(Half, EdgeCasesRoundToNearestEven) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_half(0.0), 0x0000);
  EXPECT_EQ(float_to_half(-0.0), 0x8000);
  EXPECT_EQ(float_to_half(1.0), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0), 0xc000);
  EXPECT_EQ(float_to_half(65504.0), 0x7bff);   // largest finite
  EXPECT_EQ(float_to_half(65519.99), 0x7bff);  // below the halfway point to 65536
  EXPECT_EQ(float_to_half(65520.0), 0x7c00);   // the tie rounds to even: inf
  EXPECT_EQ(float_to_half(1e10), 0x7c00);
  EXPECT_EQ(float_to_half(-1e10), 0xfc00);
  EXPECT_EQ(float_to_half(inf), 0x7c00);
  EXPECT_EQ(float_to_half(-inf), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nan("")))));
  EXPECT_EQ(float_to_half(std::nan("")) & 0x7c00, 0x7c00);
  // Ties between 1 and its neighbour 1 + 2^-10 go to the even mantissa.
  EXPECT_EQ(float_to_half(1.0 + std::ldexp(1.0, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)), 0x3c01);
  // Subnormals: units of 2^-24; half a unit ties to zero, just above rounds up.
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -25)), 0x0000);
  EXPECT_EQ(float_to_half(std::ldexp(1.5, -25)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0, -25)), 0x0002);  // 1.5 units: tie to even 2
  EXPECT_EQ(float_to_half(std::ldexp(1023.0, -24)), 0x03ff);
  EXPECT_EQ(float_to_half(std::ldexp(1023.5, -24)), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1.0, -14)), 0x0400);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0xfc00), -inf);
  // A double rounds once: just above the tie goes up although the float nearest to it is the tie.
  EXPECT_EQ(float_to_half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3c01);
}

TEST(Half, BFloat16EdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_bfloat16(1.0), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-0.0), 0x8000);
  EXPECT_EQ(float_to_bfloat16(1.0 + std::ldexp(1.0, -8)), 0x3f80);      // tie to even
  EXPECT_EQ(float_to_bfloat16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82);  // tie to even (up)
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest: inf
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f7f0000u)), 0x7f7f);  // largest finite
  EXPECT_EQ(float_to_bfloat16(-inf), 0xff80);
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::denorm_min()), 0x0000);  // half a unit: tie to 0
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x00018000u)), 0x0002);  // 1.5 units: tie to even
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nan("")))));
  EXPECT_EQ(bfloat16_to_float(0x0001), std::bit_cast<float>(0x00010000u));
}

// Every 16-bit pattern widens to a float that narrows back to it (NaNs stay NaN), and agrees with
// the float's own rounding where bfloat16 is float's upper half.
TEST(Half, EveryPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    float h = half_to_float(bits), bf = bfloat16_to_float(bits);
    if (std::isnan(h)) EXPECT_TRUE(std::isnan(half_to_float(float_to_half(h)))) << b;
    else ASSERT_EQ(float_to_half(h), bits) << b;
    if (std::isnan(bf)) EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(bf)))) << b;
    else ASSERT_EQ(float_to_bfloat16(bf), bits) << b;
  }
}

// The float overloads take an integer path; the double ones round through frexp. They agree on
// a spread of floats (and on all 2^32 of them, checked once off-line).
TEST(Half, FloatPathAgreesWithDoublePath) {
  for (uint64_t u = 0; u <= 0xffffffffull; u += 9973) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(u));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), float_to_half(static_cast<double>(f))) << u;
    ASSERT_EQ(float_to_bfloat16(f), float_to_bfloat16(static_cast<double>(f))) << u;
  }
}

Node cast_node(DType to) {
  Node n;
  n.op = Op::Cast;
  n.op_type = "Cast";
  n.name = "c";
  n.opset = 19;
  n.attrs["to"] = to;
  return n;
}

TEST(StorageCast, ConvertsToAndFromEveryType) {
  const Tensor h = half_tensor(DType::Float16, {1.5f, -2.25f, 70000.f, 0.1f});
  Tensor f(DType::Float32, {4});
  ref::cast_elements(cast_node(DType::Float32), h, f);
  EXPECT_EQ(f.data<float>()[0], 1.5f);
  EXPECT_EQ(f.data<float>()[1], -2.25f);
  EXPECT_TRUE(std::isinf(f.data<float>()[2]));  // 70000 overflowed to inf in float16
  EXPECT_EQ(f.data<float>()[3], half_to_float(float_to_half(0.1)));
  Tensor i16(DType::Int16, {4});
  ref::cast_elements(cast_node(DType::Int16), half_tensor(DType::Float16, {1.5f, -2.75f, 300.f, 0.f}), i16);
  EXPECT_EQ(i16.data<int16_t>()[0], 1);
  EXPECT_EQ(i16.data<int16_t>()[1], -2);  // truncates toward zero
  EXPECT_EQ(i16.data<int16_t>()[2], 300);
  Tensor u64(DType::UInt64, {2});
  u64.data<uint64_t>()[0] = 1;
  u64.data<uint64_t>()[1] = uint64_t{1} << 40;
  Tensor bf(DType::BFloat16, {2});
  ref::cast_elements(cast_node(DType::BFloat16), u64, bf);
  EXPECT_EQ(bits16(bf)[0], 0x3f80);
  EXPECT_EQ(bfloat16_to_float(bits16(bf)[1]), std::ldexp(1.0f, 40));
  Tensor back(DType::Float16, {2});  // bfloat16 -> float16: 2^40 overflows
  ref::cast_elements(cast_node(DType::Float16), bf, back);
  EXPECT_EQ(bits16(back)[0], 0x3c00);
  EXPECT_EQ(bits16(back)[1], 0x7c00);
  Tensor b(DType::Bool, {4});
  ref::cast_elements(cast_node(DType::Bool), half_tensor(DType::Float16, {0.f, -0.f, 2.f, std::nanf("")}), b);
  EXPECT_FALSE(b.data<bool>()[0]);
  EXPECT_FALSE(b.data<bool>()[1]);
  EXPECT_TRUE(b.data<bool>()[2]);
  EXPECT_TRUE(b.data<bool>()[3]);
  Tensor wrong(DType::Float32, {3});
  EXPECT_THROW(ref::cast_elements(cast_node(DType::Float32), h, wrong), Error);
}

TEST(StorageProto, RoundTripsRawAndTypedFields) {
  for (DType t : kNewTypes) {
    Tensor a = patterned(t, {2, 3});
    onnx::TensorProto p;
    tensor_to_proto(a, p);
    EXPECT_TRUE(same_bytes(tensor_from_proto(p, ""), a)) << dtype_name(t);
    // The typed field ONNX uses for the type: int32_data holds 16-bit values (float16 and
    // bfloat16 as their bits), uint64_data the unsigned 32- and 64-bit ones.
    onnx::TensorProto typed;
    typed.set_data_type(p.data_type());
    for (int64_t d : a.dims()) typed.add_dims(d);
    for (int64_t i = 0; i < a.numel(); ++i) {
      switch (t) {
        case DType::Int16: typed.add_int32_data(a.data<int16_t>()[i]); break;
        case DType::UInt32: typed.add_uint64_data(a.data<uint32_t>()[i]); break;
        case DType::UInt64: typed.add_uint64_data(a.data<uint64_t>()[i]); break;
        default: typed.add_int32_data(static_cast<const uint16_t*>(a.raw())[i]); break;
      }
    }
    EXPECT_TRUE(same_bytes(tensor_from_proto(typed, ""), a)) << dtype_name(t);
  }
  onnx::TensorProto short_field;
  short_field.set_data_type(onnx::TensorProto::FLOAT16);
  short_field.add_dims(3);
  short_field.add_int32_data(0x3c00);
  EXPECT_THROW(tensor_from_proto(short_field, ""), Error);
}

TEST(StorageNpy, RoundTripsAndReadsMlDtypesBFloat16) {
  auto path = (std::filesystem::temp_directory_path() / "fusor_storage_dtypes_test.npy").string();
  for (DType t : kNewTypes) {
    Tensor a = patterned(t, {3, 2});
    write_npy(path, a);
    EXPECT_TRUE(same_bytes(read_npy(path), a)) << dtype_name(t);
  }
  // ml_dtypes writes bfloat16 as '<V2'; '|V2' means the same.
  std::string header = "{'descr': '|V2', 'fortran_order': False, 'shape': (1,), }";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + std::string(1, '\0') +
                      header + std::string("\x80\x3f", 2);
  Tensor bf = parse_npy(bytes, "x.npy");
  ASSERT_EQ(bf.dtype(), DType::BFloat16);
  EXPECT_EQ(bf.scalar_as_double(), 1.0);
  std::filesystem::remove(path);
}

// ---- models with float16 values, computed in float32 ------------------------------------------

// x [2, 3, 4] -> MatMul W [4, 5] -> Add b -> Relu -> Transpose -> Softmax, and x > 0: built in
// `t`, with the same (float16-representable) weights.
std::shared_ptr<Graph> small_model(DType t) {
  test::GraphBuilder gb;
  auto values = [&](Dims dims, uint32_t seed) {
    Tensor f = test::random_normal(dims, 1.f, seed);
    Tensor out(t, dims);
    ref::cast_elements(cast_node(t), f, out);
    return out;
  };
  int x = gb.input("x", t);
  int w = gb.constant("w", values({4, 5}, 1));
  int b = gb.constant("b", values({5}, 2));
  int mm = gb.node(Op::MatMul, {x, w}, "mm", t);
  int add = gb.node(Op::Add, {mm, b}, "add", t);
  int relu = gb.node(Op::Relu, {add}, "relu", t);
  int tr = gb.node(Op::Transpose, {relu}, "tr", t, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  int sm = gb.node(Op::Softmax, {tr}, "y", t, {{"axis", int64_t{-1}}});
  Tensor zero(t, {});
  int z = gb.constant("zero", zero);
  int pos = gb.node(Op::Greater, {x, z}, "pos", DType::Bool);
  return gb.finish({sm, pos});
}

TEST(StorageTypesPass, Float16ModelMatchesFloat32Model) {
  auto f16 = small_model(DType::Float16);
  auto f32 = small_model(DType::Float32);
  Tensor x32 = test::random_normal({2, 3, 4}, 1.f, 3);
  Tensor x16(DType::Float16, {2, 3, 4});
  ref::cast_elements(cast_node(DType::Float16), x32, x16);
  ref::cast_elements(cast_node(DType::Float32), x16, x32);  // the same values in both models
  auto want = test::run_plan(test::reference_plan(f32, {{"x", {2, 3, 4}}}), {{"x", x32}});
  for (bool fast : {false, true}) {
    Plan plan = fast ? test::fast_plan(f16, {{"x", {2, 3, 4}}}) : test::reference_plan(f16, {{"x", {2, 3, 4}}});
    auto got = test::run_plan(plan, {{"x", x16}});
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(got[0].dtype(), DType::Float16);
    ASSERT_EQ(got[1].dtype(), DType::Bool);
    for (int64_t i = 0; i < got[0].numel(); ++i) {
      double a = got[0].scalar_as_double(i), b = want[0].scalar_as_double(i);
      EXPECT_NEAR(a, b, 2e-3 + 4e-3 * std::fabs(b)) << (fast ? "fast" : "reference") << " element " << i;
    }
    EXPECT_TRUE(same_bytes(got[1], want[1]));
    // The Transpose moved float16 as it is: no cast around it.
    for (const Node& n : plan.graph->nodes) {
      if (n.op == Op::Transpose) EXPECT_EQ(plan.types[static_cast<size_t>(n.inputs[0])].dtype, DType::Float16);
    }
  }
}

TEST(StorageTypesPass, LeavesModelsWithoutStorageTypesAlone) {
  std::shared_ptr<const Graph> g = small_model(DType::Float32);
  std::vector<TensorType> in = {{DType::Float32, {2, 3, 4}}};
  EXPECT_EQ(compute_storage_types_in_float32(g, in, std::vector<Tensor>(1), ref::evaluate), g);
  std::shared_ptr<const Graph> h = small_model(DType::Float16);
  in[0].dtype = DType::Float16;
  auto widened = compute_storage_types_in_float32(h, in, std::vector<Tensor>(1), ref::evaluate);
  ASSERT_NE(widened, h);
  int casts = 0;
  for (const Node& n : widened->nodes) casts += n.op == Op::Cast;
  // Into float32: every float16 input of MatMul, Add, Relu, Softmax and Greater (8; those of
  // constants fold at bind time). Back: the results of MatMul, Add, Relu and Softmax, not
  // Greater's bools (4).
  EXPECT_EQ(casts, 12);
  EXPECT_NO_THROW(widened->consumers());
}

}  // namespace
}  // namespace fusor
