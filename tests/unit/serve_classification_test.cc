// Triton's classification extension (serve/classification.h): the K largest scores as text.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "serve/classification.h"
#include "serve/status.h"

namespace fusor::serve {
namespace {

template <class T>
Tensor scores(DType dtype, std::vector<T> values) {
  Tensor t(dtype, {1, static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return t;
}

// Integer scores print as Triton prints them ("100:0", not "100.000000:0"), exactly (an int64
// above 2^53 went through a double), and every integer type is classified, as Triton does.
TEST(Classification, IntegerScoresPrintAsIntegersForEveryIntegerType) {
  EXPECT_EQ(classify(scores<int8_t>(DType::Int8, {100, 5, 7}), 2, true, "y").items,
            (std::vector<std::string>{"100:0", "7:2"}));
  EXPECT_EQ(classify(scores<uint16_t>(DType::UInt16, {3, 60000}), 1, true, "y").items,
            (std::vector<std::string>{"60000:1"}));
  const int64_t big = (int64_t{1} << 53) + 1;
  EXPECT_EQ(classify(scores<int64_t>(DType::Int64, {big, 1}), 1, true, "y").items,
            (std::vector<std::string>{std::to_string(big) + ":0"}));
  EXPECT_EQ(classify(scores<uint64_t>(DType::UInt64, {std::numeric_limits<uint64_t>::max()}), 1, true, "y").items,
            (std::vector<std::string>{"18446744073709551615:0"}));
  // ...and rank in their own type, as Triton sorts them: as doubles 2^53 + 1 tied with 2^53.
  const uint64_t two53 = uint64_t{1} << 53;
  EXPECT_EQ(classify(scores<uint64_t>(DType::UInt64, {two53, two53 + 1, 0}), 2, true, "y").items,
            (std::vector<std::string>{std::to_string(two53 + 1) + ":1", std::to_string(two53) + ":0"}));
  EXPECT_EQ(classify(scores<int64_t>(DType::Int64, {-big, big - 1, big}), 1, true, "y").items,
            (std::vector<std::string>{std::to_string(big) + ":2"}));
  EXPECT_EQ(classify(scores<float>(DType::Float32, {0.875f, 0.5f}), 1, false, "y").items,
            (std::vector<std::string>{"0.875000:0"}));
  try {
    classify(scores<bool>(DType::Bool, {true}), 1, true, "y");
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_NE(e.message.find("only float32, float64 and integer outputs can be classified"), std::string::npos) << e.message;
  }
}

// Checked before the model runs, from the declared outputs.
TEST(Classification, ARequestedOutputIsCheckedAgainstTheSignature) {
  Signature sig;
  sig.outputs = {{"probs", DType::Float32, {-1, 10}}, {"mask", DType::Bool, {-1, 10}}};
  EXPECT_NO_THROW(check_requested_output(sig, "probs", 0));
  EXPECT_NO_THROW(check_requested_output(sig, "probs", 3));
  EXPECT_NO_THROW(check_requested_output(sig, "mask", 0));
  EXPECT_THROW(check_requested_output(sig, "mask", 1), RequestError);
  try {
    check_requested_output(sig, "nope", 0);
    FAIL();
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code, Code::BadRequest);
    EXPECT_EQ(e.message, "unknown output 'nope' requested");
  }
}

}  // namespace
}  // namespace fusor::serve
