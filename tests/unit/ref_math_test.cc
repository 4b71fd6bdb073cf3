// The math rows: the elementwise table's trigonometric, rounding and activation rows against
// their formulas in double (NaN, infinities and domain edges included), integer inputs where
// the spec allows them, and the variadic, integer, bitwise and logical ops of ir/op_rows_math.h
// on small hand-checked cases and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "fusor/error.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr double kSeluAlpha = 1.67326319217681884765625, kSeluGamma = 1.05070102214813232421875;

// Every op keeps NaN as NaN (numpy's where would make some 0).
const UnaryFormula kFormulas[] = {
    {"Floor", 13, {}, [](double x) { return std::floor(x); }},
    {"Ceil", 13, {}, [](double x) { return std::ceil(x); }},
    {"Round", 11, {}, [](double x) { return std::nearbyint(x); }},
    {"Sign", 13, {}, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }},
    {"Sin", 7, {}, [](double x) { return std::sin(x); }},
    {"Cos", 7, {}, [](double x) { return std::cos(x); }},
    {"Tan", 7, {}, [](double x) { return std::tan(x); }},
    {"Asin", 7, {}, [](double x) { return std::asin(x); }},
    {"Acos", 7, {}, [](double x) { return std::acos(x); }},
    {"Atan", 7, {}, [](double x) { return std::atan(x); }},
    {"Sinh", 9, {}, [](double x) { return std::sinh(x); }},
    {"Cosh", 9, {}, [](double x) { return std::cosh(x); }},
    {"Asinh", 9, {}, [](double x) { return std::asinh(x); }},
    {"Acosh", 9, {}, [](double x) { return std::acosh(x); }},
    {"Atanh", 9, {}, [](double x) { return std::atanh(x); }},
    {"Selu", 6, {}, [](double x) { return x > 0 ? kSeluGamma * x : kSeluGamma * (kSeluAlpha * std::exp(x) - kSeluAlpha); }},
    {"Celu", 12, {{"alpha", 2.f}}, [](double x) { return std::isnan(x) ? x : std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); }},
    {"Softsign", 1, {}, [](double x) { return std::isinf(x) ? std::copysign(1.0, x) : x / (1 + std::fabs(x)); }},
    {"ThresholdedRelu", 10, {{"alpha", 0.5f}}, [](double x) { return x > 0.5 ? x : 0.0; }},
    {"Shrink", 9, {{"lambd", 1.5f}, {"bias", 0.25f}}, [](double x) { return x < -1.5 ? x + 0.25 : x > 1.5 ? x - 0.25 : 0.0; }},
};

// |got - want| within tol * |want| (+ a denormal's worth), or both NaN, or the same infinity.
bool close(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * std::fabs(want) + 1e-300;
}

class RefMathFormula : public ::testing::TestWithParam<UnaryFormula> {};

TEST_P(RefMathFormula, MatchesTheSpecInDouble) {
  const UnaryFormula& f = GetParam();
  const std::vector<double> xs = {-kInf, -1e30, -100, -20, -2.5, -1, -0.5, -1e-3, -0.0, 0,
                                  1e-3,  0.5,   1,    1.5, 2.5,  3,  20,   100,   1e30, kInf, kNaN};
  std::vector<float> x32(xs.begin(), xs.end());
  const Node node = make_node(f.op, f.opset, f.attrs);
  const auto n = static_cast<int64_t>(xs.size());
  const std::vector<float> y32 = values<float>(run(node, {make<float>({n}, x32)})[0]);
  const std::vector<double> y64 = values<double>(run(node, {make<double>({n}, xs)})[0]);
  for (size_t i = 0; i < xs.size(); ++i) {
    // The float32 want is the double formula at the float input, rounded to float (so overflow
    // to inf is expected where float overflows).
    const double want32 = static_cast<float>(f.spec(x32[i])), want64 = f.spec(xs[i]);
    EXPECT_TRUE(close(y32[i], want32, 1e-6)) << f.op << "(" << x32[i] << ") = " << y32[i] << ", want " << want32;
    EXPECT_TRUE(close(y64[i], want64, 1e-12)) << f.op << "(" << xs[i] << ") = " << y64[i] << ", want " << want64;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, RefMathFormula, ::testing::ValuesIn(kFormulas),
                         [](const auto& info) { return std::string(info.param.op); });

TEST(RefMath, RoundHalvesToEven) {
  auto out = run(make_node("Round", 11), {make<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{0, 2, 2, -0.f, -2, 3}));
}

TEST(RefMath, IntegerInputsWhereTheSpecAllowsThem) {
  auto out = run(make_node("Sign", 13), {make<int8_t>({3}, {-7, 0, 9})});
  EXPECT_EQ(values<int8_t>(out[0]), (std::vector<int8_t>{-1, 0, 1}));
  out = run(make_node("Sign", 13), {make<uint64_t>({2}, {0, 5})});
  EXPECT_EQ(values<uint64_t>(out[0]), (std::vector<uint64_t>{0, 1}));
  out = run(make_node("Shrink", 9, {{"lambd", 1.5f}, {"bias", 1.5f}}), {make<int32_t>({5}, {-3, -1, 0, 1, 3})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{-1, 0, 0, 0, 1}));
  out = run(make_node("Abs", 13), {make<int16_t>({2}, {-300, 4})});
  EXPECT_EQ(values<int16_t>(out[0]), (std::vector<int16_t>{300, 4}));
  out = run(make_node("Neg", 13), {make<int16_t>({2}, {-300, 4})});
  EXPECT_EQ(values<int16_t>(out[0]), (std::vector<int16_t>{300, -4}));
  EXPECT_THROW(run(make_node("Sin", 7), {make<int32_t>({1}, {1})}), Error);  // float only
  EXPECT_THROW(run(make_node("Neg", 13), {make<uint8_t>({1}, {1})}), Error);  // signed only
}

TEST(RefMath, VariadicOpsBroadcastAndFoldInOrder) {
  Tensor a = make<float>({2, 1}, {1, 5}), b = make<float>({3}, {2, 4, 6}), c = make<float>({}, {3});
  auto out = run(make_node("Min", 13), {a, b, c});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  out = run(make_node("Max", 13), {a, b, c});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{3, 4, 6, 5, 5, 6}));
  out = run(make_node("Sum", 13), {a, b, c});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{6, 8, 10, 10, 12, 14}));
  out = run(make_node("Mean", 13), {a, b, c});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{2, 8.f / 3, 10.f / 3, 10.f / 3, 4, 14.f / 3}));
  out = run(make_node("Max", 13), {a});  // one input: a copy
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 5}));
  out = run(make_node("Min", 13), {make<uint32_t>({2}, {7, 4000000000u}), make<uint32_t>({2}, {9, 3})});
  EXPECT_EQ(values<uint32_t>(out[0]), (std::vector<uint32_t>{7, 3}));
}

TEST(RefMath, MinAndMaxPropagateNaNFromEitherSide) {
  Tensor a = make<float>({3}, {NAN, 1, 2}), b = make<float>({3}, {1, NAN, 0});
  for (const char* op : {"Min", "Max"}) {
    auto out = values<float>(run(make_node(op, 13), {a, b})[0]);
    EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1])) << op;
    EXPECT_EQ(out[2], std::string(op) == "Min" ? 0.f : 2.f);
  }
}

TEST(RefMath, VariadicBadInput) {
  EXPECT_THROW(run(make_node("Sum", 13), {}), Error);
  EXPECT_THROW(run(make_node("Max", 13), {make<float>({2}, {1, 2}), make<double>({2}, {1, 2})}), Error);
  EXPECT_THROW(run(make_node("Max", 13), {make<float>({2}, {1, 2}), make<float>({3}, {1, 2, 3})}), Error);
  EXPECT_THROW(run(make_node("Min", 8), {make<int32_t>({1}, {1})}), Error);  // integers from opset 12
  EXPECT_THROW(run(make_node("Mean", 13), {make<int32_t>({1}, {1})}), Error);
}

TEST(RefMath, ModTakesTheDivisorsSignOrTheDividendsWithFmod) {
  Tensor a = make<int32_t>({4}, {7, -7, 7, -7}), b = make<int32_t>({4}, {3, 3, -3, -3});
  EXPECT_EQ(values<int32_t>(run(make_node("Mod", 13), {a, b})[0]), (std::vector<int32_t>{1, 2, -2, -1}));
  EXPECT_EQ(values<int32_t>(run(make_node("Mod", 13, {{"fmod", int64_t{1}}}), {a, b})[0]),
            (std::vector<int32_t>{1, -1, 1, -1}));
  auto f = run(make_node("Mod", 13, {{"fmod", int64_t{1}}}), {make<float>({2}, {-4.5f, 4.5f}), make<float>({2}, {2, -2})});
  EXPECT_EQ(values<float>(f[0]), (std::vector<float>{-0.5f, 0.5f}));
  auto m = run(make_node("Mod", 13), {make<int8_t>({1}, {-128}), make<int8_t>({1}, {-1})});  // no overflow
  EXPECT_EQ(values<int8_t>(m[0]), (std::vector<int8_t>{0}));
  auto u = run(make_node("Mod", 13), {make<uint16_t>({2}, {65535, 9}), make<uint16_t>({2}, {10, 3})});
  EXPECT_EQ(values<uint16_t>(u[0]), (std::vector<uint16_t>{5, 0}));
}

TEST(RefMath, ModBadInput) {
  // fmod=0 is defined for integers only.
  EXPECT_THROW(run(make_node("Mod", 13), {make<float>({1}, {1}), make<float>({1}, {2})}), Error);
  EXPECT_THROW(run(make_node("Mod", 13, {{"fmod", int64_t{2}}}), {make<int32_t>({1}, {1}), make<int32_t>({1}, {2})}),
               Error);
  EXPECT_THROW(run(make_node("Mod", 13), {make<int32_t>({1}, {1}), make<int32_t>({1}, {0})}), Error);
}

TEST(RefMath, BitShiftBothWaysAndPastTheWidth) {
  auto out = run(make_node("BitShift", 11, {{"direction", std::string("LEFT")}}),
                 {make<uint8_t>({4}, {1, 3, 255, 1}), make<uint8_t>({4}, {1, 2, 1, 8})});
  EXPECT_EQ(values<uint8_t>(out[0]), (std::vector<uint8_t>{2, 12, 254, 0}));
  out = run(make_node("BitShift", 11, {{"direction", std::string("RIGHT")}}),
            {make<uint64_t>({3}, {16, 5, ~uint64_t{0}}), make<uint64_t>({}, {2})});
  EXPECT_EQ(values<uint64_t>(out[0]), (std::vector<uint64_t>{4, 1, ~uint64_t{0} >> 2}));
}

TEST(RefMath, BitShiftBadInput) {
  Tensor a = make<uint32_t>({1}, {1});
  EXPECT_THROW(run(make_node("BitShift", 11, {{"direction", std::string("UP")}}), {a, a}), Error);
  EXPECT_THROW(run(make_node("BitShift", 11), {a, a}), Error);  // direction is required
  Tensor s = make<int32_t>({1}, {1});
  EXPECT_THROW(run(make_node("BitShift", 11, {{"direction", std::string("LEFT")}}), {s, s}), Error);
}

TEST(RefMath, BitwiseAndLogicalOps) {
  Tensor a = make<int16_t>({2}, {0x0f0f, -1}), b = make<int16_t>({2}, {0x00ff, 2});
  EXPECT_EQ(values<int16_t>(run(make_node("BitwiseAnd", 18), {a, b})[0]), (std::vector<int16_t>{0x000f, 2}));
  EXPECT_EQ(values<int16_t>(run(make_node("BitwiseOr", 18), {a, b})[0]), (std::vector<int16_t>{0x0fff, -1}));
  EXPECT_EQ(values<int16_t>(run(make_node("BitwiseXor", 18), {a, b})[0]), (std::vector<int16_t>{0x0ff0, -3}));
  EXPECT_EQ(values<int16_t>(run(make_node("BitwiseNot", 18), {a})[0]), (std::vector<int16_t>{~0x0f0f, 0}));
  EXPECT_THROW(run(make_node("BitwiseAnd", 18), {make<float>({1}, {1}), make<float>({1}, {1})}), Error);

  Tensor p = make<bool>({2, 1}, {true, false}), q = make<bool>({2}, {true, false});
  EXPECT_EQ(values<bool>(run(make_node("And", 7), {p, q})[0]), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values<bool>(run(make_node("Or", 7), {p, q})[0]), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(values<bool>(run(make_node("Xor", 7), {p, q})[0]), (std::vector<bool>{false, true, true, false}));
  EXPECT_THROW(run(make_node("And", 7), {make<int32_t>({1}, {1}), make<int32_t>({1}, {1})}), Error);
}

TEST(RefMath, OrEqualComparisons) {
  Tensor a = make<float>({3}, {1, 2, NAN}), b = make<float>({}, {2});
  EXPECT_EQ(values<bool>(run(make_node("GreaterOrEqual", 16), {a, b})[0]), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(values<bool>(run(make_node("LessOrEqual", 16), {a, b})[0]), (std::vector<bool>{true, true, false}));
}

TEST(RefMath, PReluSlopeBroadcastsToX) {
  auto out = run(make_node("PRelu", 16), {make<float>({2, 2}, {-1, 2, -3, NAN}), make<float>({2}, {0.5f, 2})});
  ASSERT_EQ(out[0].dims(), (Dims{2, 2}));
  auto y = values<float>(out[0]);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[1], 2.f);
  EXPECT_EQ(y[2], -1.5f);
  EXPECT_TRUE(std::isnan(y[3]));
  // The slope may not widen X (the broadcast is one-way).
  EXPECT_THROW(run(make_node("PRelu", 16), {make<float>({2}, {1, 2}), make<float>({2, 2}, {1, 2, 3, 4})}), Error);
}

TEST(RefMath, IsNaNAndIsInf) {
  Tensor x = make<float>({4}, {1, NAN, INFINITY, -INFINITY});
  EXPECT_EQ(values<bool>(run(make_node("IsNaN", 13), {x})[0]), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values<bool>(run(make_node("IsInf", 10), {x})[0]), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(values<bool>(run(make_node("IsInf", 10, {{"detect_positive", int64_t{0}}}), {x})[0]),
            (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(values<bool>(run(make_node("IsInf", 10, {{"detect_negative", int64_t{0}}}), {x})[0]),
            (std::vector<bool>{false, false, true, false}));
  EXPECT_THROW(run(make_node("IsNaN", 13), {make<int32_t>({1}, {1})}), Error);
}

TEST(RefMath, CastLikeTakesTheSecondInputsDtype) {
  auto out = run(make_node("CastLike", 15), {make<float>({3}, {1.9f, -1.9f, 0}), make<int64_t>({}, {0})});
  ASSERT_EQ(out[0].dtype(), DType::Int64);
  EXPECT_EQ(values<int64_t>(out[0]), (std::vector<int64_t>{1, -1, 0}));
}

}  // namespace
}  // namespace fusor
