// A decoder's request over KServe gRPC tensors read as a generate body (serve/grpc_generate.h),
// and raw BYTES elements off the wire (serve/tensor_codec.h).
#include <gtest/gtest.h>

#include "serve/grpc_generate.h"
#include "serve/status.h"
#include "serve/tensor_codec.h"

namespace fusor::serve {
namespace {

std::string le32(uint32_t n) {
  return {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
}

std::string refusal(auto&& f) {
  try {
    f();
  } catch (const RequestError& e) {
    return e.message;
  }
  return "(accepted)";
}

TEST(BytesItems, ReadsEachLengthPrefixedElement) {
  const std::string raw = bytes_contents({"ab", "", "xyz"});
  EXPECT_EQ(bytes_items({"s", "BYTES", {3}}, raw.data(), raw.size()), (std::vector<std::string>{"ab", "", "xyz"}));
}

TEST(BytesItems, RefusesTruncatedOrMiscountedData) {
  const WireTensor one{"s", "BYTES", {1}};
  std::string cut = le32(5) + "abc";
  EXPECT_NE(refusal([&] { bytes_items(one, cut.data(), cut.size()); }).find("runs past"), std::string::npos);
  std::string half = bytes_contents({"a"}) + "\x01\x00";
  EXPECT_NE(refusal([&] { bytes_items(one, half.data(), half.size()); }).find("4-byte length"), std::string::npos);
  std::string two = bytes_contents({"a", "b"});
  EXPECT_NE(refusal([&] { bytes_items(one, two.data(), two.size()); }).find("2 BYTES elements"), std::string::npos);
  std::string huge = le32(0xffffffffu);
  EXPECT_NE(refusal([&] { bytes_items(one, huge.data(), huge.size()); }).find("runs past"), std::string::npos);
}

inference::ModelInferRequest request() {
  inference::ModelInferRequest q;
  q.set_id("r7");
  auto* text = q.add_inputs();
  text->set_name("text_input");
  text->set_datatype("BYTES");
  text->add_shape(1);
  text->mutable_contents()->add_bytes_contents("hello");
  return q;
}

void add_typed(inference::ModelInferRequest& q, const std::string& name, const std::string& datatype,
               std::vector<int64_t> values) {
  auto* in = q.add_inputs();
  in->set_name(name);
  in->set_datatype(datatype);
  in->add_shape(static_cast<int64_t>(values.size()));
  for (int64_t v : values) {
    if (datatype == "INT64") in->mutable_contents()->add_int64_contents(v);
    else if (datatype == "BOOL") in->mutable_contents()->add_bool_contents(v != 0);
    else in->mutable_contents()->add_int_contents(static_cast<int32_t>(v));
  }
}

TEST(GenerateBody, ReadsTensorsParametersAndSamplingParameters) {
  inference::ModelInferRequest q = request();
  add_typed(q, "max_tokens", "INT64", {7});  // any integer type, not only the config's INT32
  add_typed(q, "stream", "BOOL", {1});
  auto* sampling = q.add_inputs();
  sampling->set_name("sampling_parameters");
  sampling->set_datatype("BYTES");
  sampling->add_shape(1);
  sampling->mutable_contents()->add_bytes_contents(R"({"temperature": 0, "top_k": 3})");
  auto* stops = q.add_inputs();
  stops->set_name("stop_words");
  stops->set_datatype("BYTES");
  stops->add_shape(2);
  stops->mutable_contents()->add_bytes_contents("a");
  stops->mutable_contents()->add_bytes_contents("b");
  (*q.mutable_parameters())["class"].set_string_param("batch");
  (*q.mutable_parameters())["top_k"].set_int64_param(9);

  const nlohmann::json body = generate_body(q);
  EXPECT_EQ(body["text_input"], "hello");
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stop_words"], nlohmann::json::array({"a", "b"}));
  EXPECT_EQ(body["id"], "r7");
  EXPECT_EQ(body["parameters"]["class"], "batch");
  EXPECT_EQ(body["parameters"]["top_k"], 3);  // sampling_parameters over the request's parameters
  EXPECT_EQ(body["parameters"]["temperature"], 0);
  EXPECT_FALSE(body.contains("sampling_parameters"));
}

TEST(GenerateBody, RefusesWhatADecoderDoesNotTake) {
  inference::ModelInferRequest unknown = request();
  add_typed(unknown, "input_ids", "INT64", {1});
  EXPECT_NE(refusal([&] { generate_body(unknown); }).find("no input 'input_ids'; it takes text_input"), std::string::npos);

  inference::ModelInferRequest two = request();
  add_typed(two, "max_tokens", "INT32", {1, 2});
  EXPECT_NE(refusal([&] { generate_body(two); }).find("holds 2 values"), std::string::npos);

  inference::ModelInferRequest typed = request();
  add_typed(typed, "sampling_parameters", "INT32", {1});
  EXPECT_NE(refusal([&] { generate_body(typed); }).find("must be BYTES, not INT32"), std::string::npos);

  inference::ModelInferRequest json = request();
  auto* s = json.add_inputs();
  s->set_name("sampling_parameters");
  s->set_datatype("BYTES");
  s->add_shape(1);
  s->mutable_contents()->add_bytes_contents("[1");
  EXPECT_NE(refusal([&] { generate_body(json); }).find("sampling_parameters"), std::string::npos);
}

}  // namespace
}  // namespace fusor::serve
