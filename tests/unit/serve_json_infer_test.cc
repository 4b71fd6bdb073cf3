// The KServe v2 REST infer bodies: request decoding (simdjson, straight into tensors) and
// response encoding (values printed straight into the body). Printed reals must read back to
// the same bits through an ordinary JSON parser and through our own decoder; every malformed
// request must fail with a one-line 400, and mangled bodies must fail that way, never crash.
#include "serve/json_infer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace fusor::serve {
namespace {

using nlohmann::json;

std::string encode(const Tensor& t, const std::string& id = "") {
  HttpInferRequest req;
  req.id = id;
  req.outputs = {{"y", false}};
  HttpBody b = infer_response("m", req, Signature{}, {{"y", t}});
  EXPECT_FALSE(b.header_length);
  return b.body;
}

// The "data" array's text exactly as printed.
std::string data_text(const Tensor& t) {
  std::string body = encode(t);
  size_t start = body.find("\"data\":") + 7;
  return body.substr(start, body.find(']', start) + 1 - start);
}

template <class T>
Tensor tensor_of(DType dtype, const std::vector<T>& v) {
  Tensor t(dtype, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), static_cast<T*>(t.raw()));
  return t;
}

// Decodes `data` (JSON text) as input "x" of `datatype` and shape [n].
Tensor decode(const std::string& datatype, const std::string& data, int64_t n) {
  std::string body = R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":[)" + std::to_string(n) +
                     R"(],"data":)" + data + "}]}";
  return parse_infer_request(body, std::nullopt).inputs.at("x");
}

std::vector<float> float_cases() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 0.1f, 1e-10f, 16777216.f, 16777217.f, 123456789.f,
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::lowest(), std::numeric_limits<float>::denorm_min(),
                          std::bit_cast<float>(0x007fffffu), std::bit_cast<float>(0x80000001u),
                          // 7.038531e-26: its shortest text, read as a double, rounds to the next float
                          std::bit_cast<float>(0x15ae43fdu), std::bit_cast<float>(0x95ae43fdu)};
  std::mt19937 rng(1);
  while (v.size() < 200000) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isfinite(f)) v.push_back(f);
  }
  return v;
}

TEST(JsonInferTest, Float32ValuesReadBackBitExactThroughAJsonParserAndOurDecoder) {
  std::vector<float> v = float_cases();
  Tensor t = tensor_of(DType::Float32, v);
  json j = json::parse(encode(t));
  const json& data = j["outputs"][0]["data"];
  ASSERT_EQ(data.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(data[i].get<double>())), std::bit_cast<uint32_t>(v[i]))
        << "value " << i << " printed as " << data[i].dump();
  Tensor back = decode("FP32", data_text(t), static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(back.data<float>()[i]), std::bit_cast<uint32_t>(v[i])) << "value " << i;
}

TEST(JsonInferTest, Float64ValuesReadBackBitExact) {
  std::vector<double> v = {0., -0., 1., 0.1, 5e-324, std::numeric_limits<double>::max(), 2.2250738585072014e-308};
  std::mt19937_64 rng(2);
  while (v.size() < 100000) {
    double d = std::bit_cast<double>(static_cast<uint64_t>(rng()));
    if (std::isfinite(d)) v.push_back(d);
  }
  Tensor t = tensor_of(DType::Float64, v);
  json j = json::parse(encode(t));
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint64_t>(j["outputs"][0]["data"][i].get<double>()), std::bit_cast<uint64_t>(v[i])) << i;
  Tensor back = decode("FP64", data_text(t), static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint64_t>(back.data<double>()[i]), std::bit_cast<uint64_t>(v[i])) << i;
}

TEST(JsonInferTest, RealsPrintShortestAndStayReals) {
  EXPECT_EQ(data_text(tensor_of<float>(DType::Float32, {0.1f, 1.f, -0.f, 16777216.f, 1e-45f, 3.4028235e38f, 1.5e-5f})),
            "[0.1,1.0,-0.0,16777216.0,1e-45,3.4028235e+38,1.5e-05]");
  EXPECT_EQ(data_text(tensor_of<double>(DType::Float64, {0.1, 2., 1e300})), "[0.1,2.0,1e+300]");
}

TEST(JsonInferTest, NanAndInfinityPrintAsNull) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(data_text(tensor_of<float>(DType::Float32, {std::nanf(""), inf, -inf, 1.5f})), "[null,null,null,1.5]");
  EXPECT_EQ(data_text(tensor_of<double>(DType::Float64, {-std::nan("")})), "[null]");
}

TEST(JsonInferTest, IntegersAndBooleansPrintAsThemselves) {
  EXPECT_EQ(data_text(tensor_of<int64_t>(DType::Int64, {INT64_MIN, INT64_MAX, 0, -1})),
            "[-9223372036854775808,9223372036854775807,0,-1]");
  EXPECT_EQ(data_text(tensor_of<int32_t>(DType::Int32, {INT32_MIN, 7})), "[-2147483648,7]");
  EXPECT_EQ(data_text(tensor_of<int8_t>(DType::Int8, {-128, 127})), "[-128,127]");
  EXPECT_EQ(data_text(tensor_of<uint8_t>(DType::UInt8, {0, 255})), "[0,255]");
  EXPECT_EQ(data_text(tensor_of<bool>(DType::Bool, {true, false})), "[true,false]");
  EXPECT_EQ(data_text(Tensor(DType::Float32, {0})), "[]");
}

TEST(JsonInferTest, ResponseKeepsItsLayoutAndAppendsBinaryOutputsAfterTheHeader) {
  Tensor y = tensor_of<float>(DType::Float32, {1.5f, 2.f}).reshaped({1, 2});
  EXPECT_EQ(encode(y, "r1"),
            R"({"id":"r1","model_name":"m","model_version":"1","outputs":[{"data":[1.5,2.0],"datatype":"FP32","name":"y","shape":[1,2]}]})");

  Tensor z = tensor_of<int64_t>(DType::Int64, {7, 8, 9});
  HttpInferRequest req;
  req.outputs = {{"y", true}, {"z", false}, {"y", true}};
  HttpBody b = infer_response("m", req, Signature{}, {{"y", y}, {"z", z}});
  ASSERT_TRUE(b.header_length);
  std::string header = b.body.substr(0, *b.header_length);
  EXPECT_EQ(header,
            R"({"model_name":"m","model_version":"1","outputs":[)"
            R"({"datatype":"FP32","name":"y","parameters":{"binary_data_size":8},"shape":[1,2]},)"
            R"({"data":[7,8,9],"datatype":"INT64","name":"z","shape":[3]},)"
            R"({"datatype":"FP32","name":"y","parameters":{"binary_data_size":8},"shape":[1,2]}]})");
  std::string raw(static_cast<const char*>(y.raw()), 8);
  EXPECT_EQ(b.body.substr(*b.header_length), raw + raw);
}

// They wrapped: 2^64 - 1 as INT64 was -1 (an id Gather takes as the last row), 300 as INT8 was 44.
TEST(JsonInferTest, AnIntegerItsTypeCannotHoldIsRefused) {
  for (const auto& [type, value] : std::vector<std::pair<std::string, std::string>>{
           {"INT64", "18446744073709551615"}, {"INT8", "300"}, {"UINT8", "-1"}, {"INT32", "2147483648"},
           {"UINT64", "-5"}}) {
    const std::string body = R"({"inputs":[{"name":"x","datatype":")" + type + R"(","shape":[2],"data":[1,)" + value + "]}]}";
    try {
      parse_infer_request(body, std::nullopt);
      FAIL() << type << " took " << value;
    } catch (const RequestError& e) {
      EXPECT_EQ(e.code, Code::BadRequest);
      EXPECT_NE(e.message.find(value + ", which " + type + " cannot hold"), std::string::npos) << e.message;
    }
  }
}

TEST(JsonInferTest, ResponseNamesAnUnknownOutput) {
  HttpInferRequest req;
  req.outputs = {{"nope", false}};
  try {
    infer_response("m", req, Signature{}, {});
    FAIL() << "no error";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code, Code::BadRequest);
    EXPECT_EQ(e.message, "unknown output 'nope' requested");
  }
}

TEST(JsonInferTest, RequestDecodesEveryField) {
  std::string ids(16, '\0');
  int64_t raw[2] = {5, -6};
  std::memcpy(ids.data(), raw, 16);
  std::string header =
      R"({"id":"q","parameters":{"class":"bulk","binary_data_output":true},"inputs":[)"
      R"({"name":"a","datatype":"INT64","shape":[2],"parameters":{"binary_data_size":16}},)"
      R"({"name":"b","datatype":"FP32","shape":[2,2],"data":[[1,2.5],[-3e2,18446744073709551615]]},)"
      R"({"name":"c","datatype":"INT64","shape":[2],"data":[9223372036854775807,-9223372036854775808]},)"
      R"({"name":"d","datatype":"BOOL","shape":[2],"data":[true,false]},)"
      R"({"name":"e","datatype":"INT8","shape":[1],"data":[-128]}],)"
      R"("outputs":[{"name":"y"},{"name":"z","parameters":{"binary_data":false,"classification":3}}]})";
  HttpInferRequest r = parse_infer_request(header + ids, header.size());
  EXPECT_EQ(r.id, "q");
  EXPECT_EQ(r.cls, "bulk");
  EXPECT_TRUE(r.binary_default);
  EXPECT_EQ(r.inputs.at("a").to_int64_vector(), (std::vector<int64_t>{5, -6}));
  const Tensor& b = r.inputs.at("b");
  EXPECT_EQ(b.dims(), (Dims{2, 2}));
  EXPECT_EQ(std::vector<float>(b.data<float>(), b.data<float>() + 4), (std::vector<float>{1, 2.5f, -300, 1.8446744e19f}));
  EXPECT_EQ(r.inputs.at("c").to_int64_vector(), (std::vector<int64_t>{INT64_MAX, INT64_MIN}));
  EXPECT_EQ(r.inputs.at("d").data<bool>()[0], true);
  EXPECT_EQ(r.inputs.at("e").data<int8_t>()[0], -128);
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[0].name, "y");
  EXPECT_TRUE(r.outputs[0].binary);
  EXPECT_EQ(r.outputs[0].classes, 0);
  EXPECT_EQ(r.outputs[1].name, "z");
  EXPECT_FALSE(r.outputs[1].binary);
  EXPECT_EQ(r.outputs[1].classes, 3);
  EXPECT_EQ(parse_infer_request("\xEF\xBB\xBF{\"id\":\"bom\",\"inputs\":[]}", std::nullopt).id, "bom");
}

std::string input(const std::string& fields) { return R"({"inputs":[{"name":"x",)" + fields + "}]}"; }

struct BadCase {
  std::string json;
  std::string binary;   // follows the JSON, with Inference-Header-Content-Length when not empty
  std::string message;  // the whole message; a prefix when it ends in ": " (a parser's reason follows)
};

// Python's json.dumps writes NaN (tritonclient with binary_data=False): the error says what to do.
TEST(JsonInferTest, ANaNLiteralIsRefusedWithAHint) {
  try {
    parse_infer_request(input(R"("datatype":"FP32","shape":[2],"data":[1,NaN])"), std::nullopt);
    ADD_FAILURE() << "NaN was accepted";
  } catch (const RequestError& e) {
    EXPECT_NE(e.message.find("send such tensors as binary data"), std::string::npos) << e.message;
  }
}

TEST(JsonInferTest, MalformedRequestsFailWithOneLine400) {
  std::string deep = std::string(40, '[') + "1" + std::string(40, ']');
  const std::vector<BadCase> cases = {
      {"{not json", "", "malformed JSON in the request body: "},
      {"", "", "malformed JSON in the request body: "},
      {R"({"inputs":[]} x)", "", "malformed JSON in the request body: "},
      {input(R"("datatype":"FP32","shape":[2],"data":[1,NaN])"), "", "malformed JSON in the request body: "},
      {"[]", "", "the request body must be a JSON object"},
      {"{}", "", "the request must have an 'inputs' array"},
      {R"({"inputs":{}})", "", "the request must have an 'inputs' array"},
      {R"({"inputs":[1]})", "", "each of 'inputs' must be an object"},
      {R"({"id":3,"inputs":[]})", "", "request 'id' must be a string"},
      {R"({"parameters":[],"inputs":[]})", "", "request 'parameters' must be an object"},
      {R"({"parameters":{"class":1},"inputs":[]})", "", "parameter 'class' must be a string"},
      {R"({"inputs":[{"datatype":"INT64","shape":[1],"data":[1]}]})", "", "an input has no 'name'"},
      {R"({"inputs":[{"name":1}]})", "", "input 'name' must be a string"},
      {input(R"("datatype":7,"shape":[1],"data":[1])"), "", "input 'datatype' must be a string"},
      {input(R"("datatype":"INT64","data":[1])"), "", "input 'x' has no 'shape' array"},
      {input(R"("datatype":"INT64","shape":[1.0],"data":[1])"), "", "input 'x' shape must hold integers"},
      {input(R"("datatype":"BYTES","shape":[1],"data":[1])"), "", "input 'x' has unsupported datatype 'BYTES'"},
      {input(R"("datatype":"INT64","shape":[-1],"data":[1])"), "", "input 'x' has a negative dimension in shape [-1]"},
      {input(R"("datatype":"INT64","shape":[65536,65536],"data":[1])"), "", "input 'x' shape [65536,65536] is too large"},
      {input(R"("datatype":"INT64","shape":[3],"data":[1,2])"), "", "input 'x' has 2 values; shape [3] needs 3"},
      {input(R"("datatype":"INT64","shape":[2],"data":[[1],[2,3]])"), "", "input 'x' has 3 values; shape [2] needs 2"},
      {input(R"("datatype":"INT64","shape":[1],"data":7)"), "", ""},  // a bare scalar is one value: accepted
      {input(R"("datatype":"INT64","shape":[2],"data":[1,1.5])"), "", "input 'x' data holds a value that is not INT64"},
      {input(R"("datatype":"INT64","shape":[1],"data":["1"])"), "", "input 'x' data holds a value that is not INT64"},
      {input(R"("datatype":"FP32","shape":[1],"data":[true])"), "", "input 'x' data holds a value that is not FP32"},
      {input(R"("datatype":"BOOL","shape":[1],"data":[1])"), "", "input 'x' data holds a value that is not BOOL"},
      {input(R"("datatype":"INT64","shape":[1],"data":)" + deep), "", "input 'x' data is nested too deeply"},
      {input(R"("datatype":"INT64","shape":[1])"), "", "input 'x' has neither 'data' nor binary_data_size"},
      {R"({"inputs":[{"name":"x","datatype":"INT64","shape":[1],"data":[1]},{"name":"x","datatype":"INT64","shape":[1],"data":[1]}]})",
       "", "input 'x' is given twice"},
      {input(R"("datatype":"INT64","shape":[1],"parameters":{"binary_data_size":-8})"), "",
       "input 'x' binary_data_size must be a non-negative integer"},
      {input(R"("datatype":"INT64","shape":[1],"parameters":{"binary_data_size":8.0})"), "",
       "input 'x' binary_data_size must be a non-negative integer"},
      {input(R"("datatype":"INT64","shape":[1],"parameters":{"binary_data_size":8})"), "",
       "input 'x' binary_data_size 8 runs past the body"},
      {input(R"("datatype":"INT64","shape":[2],"parameters":{"binary_data_size":4})"), "abcd",
       "input 'x' has 4 bytes of data; INT64 [2] needs 16"},
      {input(R"("datatype":"INT64","shape":[1],"data":[1])"), "abcd", "the body has 4 bytes of binary data no input claims"},
      {R"({"inputs":[],"outputs":{}})", "", "request 'outputs' must be an array"},
      {R"({"inputs":[],"outputs":[1]})", "", "each of 'outputs' must be an object"},
      {R"({"inputs":[],"outputs":[{"name":2}]})", "", "output 'name' must be a string"},
  };
  auto message = [](const std::string& body, std::optional<size_t> header_length) -> std::string {
    try {
      parse_infer_request(body, header_length);
      return "";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.code, Code::BadRequest);
      EXPECT_EQ(e.message.find('\n'), std::string::npos);
      return e.message;
    }
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.json);
    std::string m = message(c.json + c.binary, c.binary.empty() ? std::nullopt : std::optional(c.json.size()));
    if (c.message.ends_with(": ")) EXPECT_TRUE(m.starts_with(c.message)) << m;
    else EXPECT_EQ(m, c.message);
  }
  EXPECT_EQ(message("{}", 3), "Inference-Header-Content-Length 3 exceeds the body's 2 bytes");
}

// Every prefix and many single-byte mutations of a valid body with binary data: each is either
// accepted or refused with a one-line 400.
TEST(JsonInferTest, MangledBodiesFailCleanly) {
  std::string header =
      R"({"id":"q","inputs":[{"name":"a","datatype":"INT64","shape":[2],"parameters":{"binary_data_size":16}},)"
      R"({"name":"b","datatype":"FP32","shape":[2,1],"data":[[1.5],[2]]}],"outputs":[{"name":"y"}]})";
  const std::string body = header + std::string(16, '\1');
  auto survives = [](const std::string& b, std::optional<size_t> len) {
    try {
      parse_infer_request(b, len);
    } catch (const RequestError& e) {
      EXPECT_EQ(e.code, Code::BadRequest);
      EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
    }
  };
  ASSERT_NO_THROW(parse_infer_request(body, header.size()));
  for (size_t n = 0; n < body.size(); ++n) {
    survives(body.substr(0, n), std::min(n, header.size()));
    survives(body.substr(0, n), std::nullopt);
  }
  std::mt19937 rng(3);
  const std::string alphabet = "{}[],:\"0123456789.-e \\xtfn";
  for (int i = 0; i < 20000; ++i) {
    std::string m = body;
    m[rng() % header.size()] = i % 2 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
    survives(m, header.size());
  }
}

}  // namespace
}  // namespace fusor::serve
