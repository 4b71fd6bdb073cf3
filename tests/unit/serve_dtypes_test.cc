// KServe v2 for the storage dtypes (FP16, BF16) and the integer types beside them (INT16,
// UINT16, UINT32, UINT64): names both ways, JSON numbers in and out (float16 and bfloat16 values
// come back to the same bits), binary data as raw bits, typed values.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "ir/half.h"
#include "ref_test_util.h"
#include "serve/json_infer.h"
#include "serve/signature.h"
#include "serve/status.h"
#include "serve/tensor_codec.h"

namespace fusor::serve {
namespace {

using test::bits16;
using test::kNewTypes;

std::string response_data(const Tensor& t) {
  HttpInferRequest req;
  req.outputs = {{"y", false}};
  std::string body = infer_response("m", req, Signature{}, {{"y", t}}).body;
  size_t start = body.find("\"data\":") + 7;
  return body.substr(start, body.find(']', start) + 1 - start);
}

Tensor request_input(const std::string& datatype, int64_t n, const std::string& data, const std::string& binary = "") {
  std::string header = R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":[)" + std::to_string(n) + "]";
  if (binary.empty()) header += R"(,"data":)" + data + "}]}";
  else header += R"(,"parameters":{"binary_data_size":)" + std::to_string(binary.size()) + "}}]}";
  return parse_infer_request(header + binary, binary.empty() ? std::nullopt : std::optional<size_t>(header.size()))
      .inputs.at("x");
}

TEST(ServeDtypes, NamesRoundTrip) {
  for (DType t : kNewTypes) EXPECT_EQ(dtype_from_triton(triton_dtype(t)), t) << dtype_name(t);
  EXPECT_STREQ(triton_dtype(DType::Float16), "FP16");
  EXPECT_STREQ(triton_dtype(DType::BFloat16), "BF16");
  EXPECT_STREQ(triton_dtype(DType::UInt64), "UINT64");
}

// Every finite float16 and bfloat16 prints as a JSON number that decodes to the same bits.
TEST(ServeDtypes, HalfValuesReadBackBitExactThroughJson) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    std::vector<uint16_t> bits;
    for (uint32_t b = 0; b <= 0xffff; ++b) {
      float f = t == DType::Float16 ? half_to_float(static_cast<uint16_t>(b)) : bfloat16_to_float(static_cast<uint16_t>(b));
      if (std::isfinite(f)) bits.push_back(static_cast<uint16_t>(b));
    }
    Tensor a(t, {static_cast<int64_t>(bits.size())});
    std::memcpy(a.raw(), bits.data(), a.nbytes());
    std::string text = response_data(a);
    EXPECT_EQ(nlohmann::json::parse(text).size(), bits.size());
    Tensor back = request_input(triton_dtype(t), a.numel(), text);
    ASSERT_EQ(back.dtype(), t);
    EXPECT_EQ(std::memcmp(back.raw(), a.raw(), a.nbytes()), 0) << dtype_name(t);
  }
  Tensor h(DType::Float16, {3});
  bits16(h)[0] = float_to_half(1.5);
  bits16(h)[1] = 0x7c00;  // inf
  bits16(h)[2] = float_to_half(0.1);
  EXPECT_EQ(response_data(h), "[1.5,null,0.099975586]");
  // Numbers round to nearest even on the way in, and overflow to inf.
  Tensor in = request_input("FP16", 3, "[1, 1.00048828125, 70000]");
  EXPECT_EQ(bits16(in)[0], 0x3c00);
  EXPECT_EQ(bits16(in)[1], 0x3c00);
  EXPECT_EQ(bits16(in)[2], 0x7c00);
  EXPECT_THROW(request_input("BF16", 1, "[true]"), RequestError);
}

TEST(ServeDtypes, IntegersPrintAndReadAsThemselves) {
  EXPECT_EQ(response_data(request_input("INT16", 3, "[-32768, 32767, 7]")), "[-32768,32767,7]");
  EXPECT_EQ(response_data(request_input("UINT16", 2, "[65535, 0]")), "[65535,0]");
  EXPECT_EQ(response_data(request_input("UINT32", 2, "[4294967295, 1]")), "[4294967295,1]");
  EXPECT_EQ(response_data(request_input("UINT64", 2, "[18446744073709551615, 2]")), "[18446744073709551615,2]");
  EXPECT_THROW(request_input("UINT32", 1, "[1.5]"), RequestError);
}

TEST(ServeDtypes, BinaryDataCarriesTheBits) {
  for (DType t : kNewTypes) {
    Tensor a(t, {3});
    auto* bytes = static_cast<uint8_t*>(a.raw());
    for (size_t i = 0; i < a.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 29 + 3);
    std::string raw(static_cast<const char*>(a.raw()), a.nbytes());
    Tensor back = request_input(triton_dtype(t), 3, "", raw);
    ASSERT_EQ(back.dtype(), t);
    EXPECT_EQ(std::memcmp(back.raw(), a.raw(), a.nbytes()), 0) << dtype_name(t);
    WireTensor w{"x", triton_dtype(t), {3}};
    EXPECT_EQ(std::memcmp(from_raw(w, raw.data(), raw.size()).raw(), a.raw(), a.nbytes()), 0);
    EXPECT_THROW(from_raw(w, raw.data(), raw.size() - 1), RequestError);
  }
}

TEST(ServeDtypes, TypedValuesConvert) {
  const std::vector<double> v = {1.0, -2.5};
  Tensor h = from_values(WireTensor{"x", "FP16", {2}}, std::span<const double>(v));
  EXPECT_EQ(bits16(h)[0], 0x3c00);
  EXPECT_EQ(half_to_float(bits16(h)[1]), -2.5f);
  const std::vector<uint64_t> u = {UINT64_MAX};
  EXPECT_EQ(from_values(WireTensor{"x", "UINT64", {1}}, std::span<const uint64_t>(u)).data<uint64_t>()[0], UINT64_MAX);
  const std::vector<uint32_t> s = {65535};
  EXPECT_EQ(from_values(WireTensor{"x", "UINT16", {1}}, std::span<const uint32_t>(s)).data<uint16_t>()[0], 65535);
}

}  // namespace
}  // namespace fusor::serve
