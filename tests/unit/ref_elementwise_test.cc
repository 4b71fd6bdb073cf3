// Elementwise and broadcast ops (group A): shape function + reference kernel on small
// hand-checkable cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>

#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

TEST(RefElementwise, AddBroadcastsRowOverMatrix) {
  auto out = run(make_node("Add", 14), {make<float>({2, 3}, {0, 1, 2, 3, 4, 5}), make<float>({3}, {10, 20, 30})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{10, 21, 32, 13, 24, 35}));
}

TEST(RefElementwise, BroadcastColumnTimesRowAndScalar) {
  auto out = run(make_node("Mul", 14), {make<int64_t>({2, 1}, {2, 3}), make<int64_t>({1, 3}, {1, 10, 100})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{2, 20, 200, 3, 30, 300}));
  out = run(make_node("Sub", 14), {make<float>({}, {1}), make<float>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0, -1, -2, -3}));
  // Middle-axis broadcast: [2,2,2] + [2,1,2].
  out = run(make_node("Add", 14), {make<int32_t>({2, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0}),
                                   make<int32_t>({2, 1, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(RefElementwise, IntDivTruncatesAndPowMixesTypes) {
  auto out = run(make_node("Div", 14), {make<int32_t>({4}, {7, -7, 7, -7}), make<int32_t>({4}, {2, 2, -2, -2})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{3, -3, -3, 3}));
  out = run(make_node("Pow", 15), {make<float>({3}, {1, 2, 3}), make<int64_t>({3}, {4, 5, 6})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 32, 729}));
  out = run(make_node("Pow", 15), {make<int32_t>({3}, {1, 2, 3}), make<float>({3}, {4, 5, 6})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{1, 32, 729}));
}

TEST(RefElementwise, CastFloatToIntTruncatesTowardZero) {
  auto out = run(make_node("Cast", 13, {{"to", DType::Int64}}), {make<float>({4}, {1.9f, -1.9f, 0.5f, -0.5f})});
  ASSERT_EQ(out[0].dtype(), DType::Int64);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{1, -1, 0, 0}));
  out = run(make_node("Cast", 13, {{"to", DType::Bool}}), {make<float>({3}, {0.f, 0.1f, -2.f})});
  EXPECT_EQ(values<bool>(out[0]), (std::vector<bool>{false, true, true}));
  // uint64 holds [2^63, 2^64) as numpy and ONNX Runtime give it (through int64 it was 2^63).
  out = run(make_node("Cast", 13, {{"to", DType::UInt64}}), {make<double>({3}, {1.2e19, 9223372036854775808.0, 5.5})});
  EXPECT_EQ(values<uint64_t>(out[0]), (std::vector<uint64_t>{12000000000000000000ull, 9223372036854775808ull, 5}));
  out = run(make_node("Cast", 13, {{"to", DType::UInt64}}), {make<float>({1}, {1.2e19f})});
  EXPECT_EQ(values<uint64_t>(out[0]), (std::vector<uint64_t>{static_cast<uint64_t>(1.2e19f)}));
}

TEST(RefElementwise, WhereBroadcastsConditionAndOperands) {
  auto out = run(make_node("Where", 16), {make<bool>({2, 1}, {true, false}), make<float>({3}, {1, 2, 3}),
                                          make<float>({}, {-1})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 2, 3, -1, -1, -1}));
}

TEST(RefElementwise, ComparisonsGiveBool) {
  auto out = run(make_node("Less", 13), {make<int64_t>({3}, {1, 5, 3}), make<int64_t>({}, {3})});
  ASSERT_EQ(out[0].dtype(), DType::Bool);
  EXPECT_EQ(values<bool>(out[0]), (std::vector<bool>{true, false, false}));
}

TEST(RefElementwise, ClipAttributesBeforeOpset11InputsAfter) {
  Tensor x = make<float>({4}, {-5, -0.5f, 0.5f, 5});
  auto out = run(make_node("Clip", 6, {{"min", -1.0f}, {"max", 1.0f}}), {x});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{-1, -0.5f, 0.5f, 1}));
  out = run(make_node("Clip", 13), {x, make<float>({}, {0}), Tensor()});  // min only
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0, 0, 0.5f, 5}));
  out = run(make_node("Clip", 13), {x, Tensor(), make<float>({}, {0})});  // max only
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{-5, -0.5f, 0, 0}));
}

TEST(RefElementwise, ActivationsMatchFormulas) {
  Tensor x = make<float>({3}, {-1, 0, 2});
  auto sig = run(make_node("Sigmoid", 13), {x});
  EXPECT_FLOAT_EQ(values<float>(sig[0])[2], 1.0f / (1.0f + std::exp(-2.0f)));
  auto gelu = run(make_node("Gelu", 20), {x});
  EXPECT_NEAR(values<float>(gelu[0])[2], 1.9544997f, 1e-6);
  auto gelu_tanh = run(make_node("Gelu", 20, {{"approximate", std::string("tanh")}}), {x});
  EXPECT_NEAR(values<float>(gelu_tanh[0])[2], 1.9545977f, 1e-6);
  auto relu = run(make_node("Relu", 14), {x});
  EXPECT_EQ(values<float>(relu[0]), (std::vector<float>{0, 0, 2}));
}

// The reference is the gate's ground truth: an activation of NaN is NaN (std::min(1, NaN) made
// HardSigmoid's 1).
TEST(RefElementwise, ActivationsKeepNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"Relu", "HardSigmoid", "HardSwish", "LeakyRelu", "Sigmoid", "Elu"}) {
    const std::vector<float> y = values<float>(run(make_node(op, 14), {make<float>({2}, {nan, 1.f})})[0]);
    EXPECT_TRUE(std::isnan(y[0])) << op << "(NaN) = " << y[0];
  }
}

// A unary op of the elementwise table against its spec's formula evaluated in double (with the
// float32 attribute values a model carries). The points reach where a naive float formula
// overflows (exp(100)) or cancels (exp(x) - 1 near 0).
const UnaryFormula kFormulas[] = {
    {"Sigmoid", 13, {}, [](double x) { return 1 / (1 + std::exp(-x)); }},
    {"Tanh", 13, {}, [](double x) { return std::tanh(x); }},
    {"LeakyRelu", 16, {{"alpha", 0.1f}}, [](double x) { return x < 0 ? double(0.1f) * x : x; }},
    {"HardSigmoid", 6, {}, [](double x) { return std::clamp(double(0.2f) * x + 0.5, 0.0, 1.0); }},
    {"HardSwish", 14, {}, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
    {"Softplus", 1, {}, [](double x) { return std::log1p(std::exp(x)); }},
    {"Mish", 18, {}, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
    {"Elu", 6, {{"alpha", 0.5f}}, [](double x) { return x < 0 ? 0.5 * (std::exp(x) - 1) : x; }},
};

class RefFormula : public ::testing::TestWithParam<UnaryFormula> {};

TEST_P(RefFormula, MatchesTheSpecInDouble) {
  const UnaryFormula& f = GetParam();
  const std::vector<double> xs = {-100, -20, -3, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 3, 20, 100};
  std::vector<float> x32(xs.begin(), xs.end());
  const Node node = make_node(f.op, f.opset, f.attrs);
  const std::vector<float> y32 = values<float>(run(node, {make<float>({13}, x32)})[0]);
  const std::vector<double> y64 = values<double>(run(node, {make<double>({13}, xs)})[0]);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want32 = f.spec(x32[i]), want64 = f.spec(xs[i]);
    EXPECT_LE(std::fabs(y32[i] - want32), 1e-5 * std::fabs(want32) + 1e-43) << f.op << "(" << x32[i] << ") = " << y32[i];
    EXPECT_LE(std::fabs(y64[i] - want64), 1e-12 * std::fabs(want64) + 1e-300) << f.op << "(" << xs[i] << ") = " << y64[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Table, RefFormula, ::testing::ValuesIn(kFormulas),
                         [](const auto& info) { return std::string(info.param.op); });

TEST(RefElementwise, DropoutIsIdentityWithAllTrueMask) {
  auto out = run(make_node("Dropout", 13, {}, 2), {make<float>({2}, {1, 2})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 2}));
  ASSERT_EQ(out[1].dtype(), DType::Bool);
  EXPECT_EQ(values<bool>(out[1]), (std::vector<bool>{true, true}));
}

TEST(RefElementwise, ExpandAndBatchNorm) {
  auto out = run(make_node("Expand", 13), {make<float>({3, 1}, {1, 2, 3}), make<int64_t>({3}, {2, 1, 2})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  // y = (x - mean) / sqrt(var + eps) * scale + bias, channel 1 of [1,2,2].
  out = run(make_node("BatchNormalization", 15, {{"epsilon", 0.0f}}),
            {make<float>({1, 2, 2}, {1, 2, 3, 5}), make<float>({2}, {1, 2}), make<float>({2}, {0, 1}),
             make<float>({2}, {0, 1}), make<float>({2}, {1, 4})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 2, 3, 5}));
}

TEST(RefElementwise, UnsupportedDtypesAndBadShapesNameTheNode) {
  try {
    run(make_node("Sqrt", 13), {make<int64_t>({1}, {4})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("test_Sqrt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unsupported dtype int64"), std::string::npos) << msg;
  }
  EXPECT_THROW(run(make_node("Add", 14), {make<float>({2}, {1, 2}), make<float>({3}, {1, 2, 3})}), Error);
  EXPECT_THROW(run(make_node("Add", 14), {make<float>({1}, {1}), make<int64_t>({1}, {1})}), Error);
  // An ONNX type code: the importer turns those into DTypes (and rejects float8 and the like).
  EXPECT_THROW(run(make_node("Cast", 13, {{"to", int64_t{1}}}), {make<float>({1}, {1})}), Error);
  EXPECT_THROW(run(make_node("Div", 14), {make<int32_t>({1}, {1}), make<int32_t>({1}, {0})}), Error);
}

}  // namespace
}  // namespace fusor
