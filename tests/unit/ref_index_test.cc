// Hand-checked cases for the index family: the Reduce* kinds (empty sets, integer and bool
// inputs, negative axes), ArgMax/ArgMin, Hardmax, TopK, CumSum, OneHot and Size, plus the
// bad inputs that must give a one-line error naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

using V = std::vector<int64_t>;
const float kInf = std::numeric_limits<float>::infinity();

TEST(RefIndex, ReduceKindsAlongOneAxis) {
  Tensor x = make({2, 3}, {1, -2, 3, 4, 5, -6});
  Tensor axes = make_i64({1}, {-1});
  auto reduce = [&](Op op) { return run(node_of(op, 18, {{"keepdims", int64_t{0}}}), {x, axes})[0]; };
  expect_values(reduce(Op::ReduceMin), {2}, {-2, -6});
  expect_values(reduce(Op::ReduceProd), {2}, {-6, -120});
  expect_values(reduce(Op::ReduceL1), {2}, {6, 15});
  expect_values(reduce(Op::ReduceL2), {2}, {std::sqrt(14.f), std::sqrt(77.f)});
  expect_values(reduce(Op::ReduceSumSquare), {2}, {14, 77});
  expect_values(reduce(Op::ReduceLogSumExp), {2},
                {std::log(std::exp(1.f) + std::exp(-2.f) + std::exp(3.f)),
                 std::log(std::exp(4.f) + std::exp(5.f) + std::exp(-6.f))});
  Tensor pos = make({2, 2}, {1, 2, 3, 5});
  expect_values(run(node_of(Op::ReduceLogSum, 18), {pos, make_i64({1}, {0})})[0], {1, 2},
                {std::log(4.f), std::log(7.f)});
}

TEST(RefIndex, ReduceAxesAttributeBeforeOpset18) {
  Tensor x = make({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto y = run(node_of(Op::ReduceProd, 13, {{"axes", V{0, -1}}}), {x});
  expect_values(y[0], {1, 2, 1}, {1 * 2 * 5 * 6, 3 * 4 * 7 * 8});
  // No axes reduces everything; noop_with_empty_axes (opset 18) reduces nothing instead.
  expect_values(run(node_of(Op::ReduceMin, 13, {{"keepdims", int64_t{0}}}), {x})[0], {}, {1});
}

TEST(RefIndex, NoopWithEmptyAxesKeepsEachKindsElementwisePart) {
  // As ONNX Runtime 1.30 and the clarified spec (onnx/onnx#7394): the input was returned as is.
  Tensor x = make({2, 2}, {-1, 2, 0.5f, -4});
  auto noop = [&](Op op) {
    return run(node_of(op, 18, {{"noop_with_empty_axes", int64_t{1}}}), {x, Tensor()})[0];
  };
  expect_values(noop(Op::ReduceL1), {2, 2}, {1, 2, 0.5f, 4});
  expect_values(noop(Op::ReduceL2), {2, 2}, {1, 2, 0.5f, 4});
  expect_values(noop(Op::ReduceSumSquare), {2, 2}, {1, 4, 0.25f, 16});
  expect_values(noop(Op::ReduceLogSumExp), {2, 2}, {-1, 2, 0.5f, -4});
  expect_values(noop(Op::ReduceMax), {2, 2}, {-1, 2, 0.5f, -4});
  Tensor logs = run(node_of(Op::ReduceLogSum, 18, {{"noop_with_empty_axes", int64_t{1}}}),
                    {make({2}, {1, 4}), make_i64({0}, {})})[0];
  expect_values(logs, {2}, {0, std::log(4.f)});
}

TEST(RefIndex, ReduceEmptySetGivesTheIdentity) {
  Tensor x = make({2, 0, 2}, {});
  Tensor axes = make_i64({1}, {1});
  auto reduce = [&](Op op) { return run(node_of(op, 18), {x, axes})[0]; };
  expect_values(reduce(Op::ReduceSum), {2, 1, 2}, {0, 0, 0, 0});
  expect_values(reduce(Op::ReduceProd), {2, 1, 2}, {1, 1, 1, 1});
  expect_values(reduce(Op::ReduceMin), {2, 1, 2}, {kInf, kInf, kInf, kInf});
  expect_values(reduce(Op::ReduceMax), {2, 1, 2}, {-kInf, -kInf, -kInf, -kInf});
  expect_values(reduce(Op::ReduceLogSumExp), {2, 1, 2}, {-kInf, -kInf, -kInf, -kInf});
  expect_values(reduce(Op::ReduceLogSum), {2, 1, 2}, {-kInf, -kInf, -kInf, -kInf});
  expect_values(reduce(Op::ReduceL1), {2, 1, 2}, {0, 0, 0, 0});
  expect_values(reduce(Op::ReduceL2), {2, 1, 2}, {0, 0, 0, 0});
  expect_values(reduce(Op::ReduceSumSquare), {2, 1, 2}, {0, 0, 0, 0});
  // Integers take the dtype's extremes.
  auto imin = run(node_of(Op::ReduceMin, 18), {test::tensor_of<int32_t>({0, 1}, {}), make_i64({1}, {0})});
  EXPECT_EQ(test::values<int32_t>(imin[0]), std::vector<int32_t>{std::numeric_limits<int32_t>::max()});
}

TEST(RefIndex, ReduceIntegerAndBoolInputs) {
  auto prod = run(node_of(Op::ReduceProd, 18, {{"keepdims", int64_t{0}}}),
                  {make_i64({2, 2}, {3, -4, 5, 6}), make_i64({1}, {1})});
  EXPECT_EQ(test::values<int64_t>(prod[0]), (std::vector<int64_t>{-12, 30}));
  auto l2 = run(node_of(Op::ReduceL2, 18), {test::tensor_of<int32_t>({2}, {3, 4}), Tensor()});
  EXPECT_EQ(test::values<int32_t>(l2[0]), std::vector<int32_t>{5});
  Tensor neg = test::tensor_of<int32_t>({2}, {-3, -4});
  EXPECT_EQ(test::values<int32_t>(run(node_of(Op::ReduceL1, 18), {neg, Tensor()})[0]), std::vector<int32_t>{7});
  EXPECT_EQ(test::values<int32_t>(run(node_of(Op::ReduceMean, 18), {neg, Tensor()})[0]), std::vector<int32_t>{-3});
  EXPECT_EQ(test::values<int32_t>(run(node_of(Op::ReduceMax, 18), {neg, Tensor()})[0]), std::vector<int32_t>{-3});
  Tensor b = test::tensor_of<bool>({2, 2}, {true, false, false, false});
  auto mx = run(node_of(Op::ReduceMax, 20), {b, make_i64({1}, {1})});
  auto mn = run(node_of(Op::ReduceMin, 20), {b, make_i64({1}, {1})});
  EXPECT_EQ(test::values<bool>(mx[0]), (std::vector<bool>{true, false}));
  EXPECT_EQ(test::values<bool>(mn[0]), (std::vector<bool>{false, false}));
  EXPECT_THROW(run(node_of(Op::ReduceSum, 13), {b, Tensor()}), Error);
}

TEST(RefIndex, ReduceLogSumExpIsStableAndMaxKeepsNaN) {
  auto y = run(node_of(Op::ReduceLogSumExp, 18), {make({2}, {1000, 1000}), Tensor()});
  expect_values(y[0], {1}, {1000 + std::log(2.f)}, 1e-3f);
  auto m = run(node_of(Op::ReduceMax, 18), {make({3}, {1, NAN, 2}), Tensor()});
  EXPECT_TRUE(std::isnan(m[0].data<float>()[0]));
}

TEST(RefIndex, ReduceBadAxis) {
  expect_error(node_of(Op::ReduceL1, 18), {make({2}, {1, 2}), make_i64({1}, {1})}, "axis 1 is out of range");
}

TEST(RefIndex, ArgMaxArgMinTiesAndSelectLastIndex) {
  Tensor x = make({2, 4}, {1, 3, 3, 2, 5, 0, 5, 0});
  auto first = run(node_of(Op::ArgMax, 13, {{"axis", int64_t{-1}}}), {x});
  ASSERT_EQ(first[0].dims(), (Dims{2, 1}));
  EXPECT_EQ(test::values<int64_t>(first[0]), (V{1, 0}));
  auto last = run(node_of(Op::ArgMax, 13, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}), {x});
  EXPECT_EQ(test::values<int64_t>(last[0]), (V{2, 2}));
  auto mn =
      run(node_of(Op::ArgMin, 13, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}}),
          {x});
  ASSERT_EQ(mn[0].dims(), (Dims{2}));
  EXPECT_EQ(test::values<int64_t>(mn[0]), (V{0, 3}));
  auto col = run(node_of(Op::ArgMin, 13), {x});  // default axis 0
  EXPECT_EQ(test::values<int64_t>(col[0]), (V{0, 1, 0, 1}));
  // NaN is the extreme either way: the first one, or the last with select_last_index.
  Tensor nan = make({4}, {1, NAN, 3, NAN});
  EXPECT_EQ(test::values<int64_t>(run(node_of(Op::ArgMax, 13), {nan})[0]), (V{1}));
  EXPECT_EQ(test::values<int64_t>(run(node_of(Op::ArgMin, 13), {nan})[0]), (V{1}));
  EXPECT_EQ(test::values<int64_t>(run(node_of(Op::ArgMax, 13, {{"select_last_index", int64_t{1}}}), {nan})[0]), (V{3}));
  expect_error(node_of(Op::ArgMax, 13, {{"axis", int64_t{2}}}), {x}, "out of range");
  expect_error(node_of(Op::ArgMax, 13, {{"axis", int64_t{1}}}), {make({2, 0}, {})}, "is empty");
}

TEST(RefIndex, HardmaxAxisDependsOnOpset) {
  Tensor x = make({2, 2}, {1, 4, 4, 2});
  // Opset 11, axis 0: coerced to [1, 4], one 1 at the first maximum overall.
  expect_values(run(node_of(Op::Hardmax, 11, {{"axis", int64_t{0}}}), {x})[0], {2, 2}, {0, 1, 0, 0});
  // Opset 13, axis 0: one 1 per column.
  expect_values(run(node_of(Op::Hardmax, 13, {{"axis", int64_t{0}}}), {x})[0], {2, 2}, {0, 1, 1, 0});
  expect_values(run(node_of(Op::Hardmax, 13), {x})[0], {2, 2}, {0, 1, 1, 0});
}

TEST(RefIndex, TopKTiesGoToTheLowerIndex) {
  Tensor x = make({2, 4}, {1, 3, 3, 2, 7, 7, 7, 7});
  auto big = run(node_of(Op::TopK, 11, {}, 2), {x, make_i64({1}, {2})});
  expect_values(big[0], {2, 2}, {3, 3, 7, 7});
  EXPECT_EQ(test::values<int64_t>(big[1]), (V{1, 2, 0, 1}));
  auto small = run(node_of(Op::TopK, 11, {{"largest", int64_t{0}}}, 2), {x, make_i64({1}, {3})});
  expect_values(small[0], {2, 3}, {1, 2, 3, 7, 7, 7});
  EXPECT_EQ(test::values<int64_t>(small[1]), (V{0, 3, 1, 0, 1, 2}));
  // Opset 1 takes k as an attribute; axis 0 here.
  auto col = run(node_of(Op::TopK, 1, {{"k", int64_t{1}}, {"axis", int64_t{0}}}, 2), {x});
  expect_values(col[0], {1, 4}, {7, 7, 7, 7});
  EXPECT_EQ(test::values<int64_t>(col[1]), (V{1, 1, 1, 1}));
  auto none = run(node_of(Op::TopK, 11, {}, 2), {x, make_i64({1}, {0})});
  EXPECT_EQ(none[0].dims(), (Dims{2, 0}));
}

TEST(RefIndex, TopKBadK) {
  Tensor x = make({2, 2}, {1, 2, 3, 4});
  expect_error(node_of(Op::TopK, 11, {}, 2), {x, make_i64({1}, {3})}, "k 3 is out of range [0, 2]");
  expect_error(node_of(Op::TopK, 11, {}, 2), {x, make_i64({1}, {-1})}, "k -1 is out of range");
  expect_error(node_of(Op::TopK, 1, {}, 2), {x}, "k -1 is out of range");  // no k attribute
  expect_error(node_of(Op::TopK, 11, {{"axis", int64_t{2}}}, 2), {x, make_i64({1}, {1})}, "out of range");
}

TEST(RefIndex, CumSumExclusiveReverseAndAxis) {
  Tensor x = make({5}, {1, 2, 3, 4, 5});
  Tensor axis = make_i64({}, {0});
  expect_values(run(node_of(Op::CumSum, 14), {x, axis})[0], {5}, {1, 3, 6, 10, 15});
  expect_values(run(node_of(Op::CumSum, 14, {{"exclusive", int64_t{1}}}), {x, axis})[0], {5}, {0, 1, 3, 6, 10});
  expect_values(run(node_of(Op::CumSum, 14, {{"reverse", int64_t{1}}}), {x, axis})[0], {5}, {15, 14, 12, 9, 5});
  expect_values(run(node_of(Op::CumSum, 14, {{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}), {x, axis})[0], {5},
                {14, 12, 9, 5, 0});
  auto rows = run(node_of(Op::CumSum, 11),
                  {test::tensor_of<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}), test::tensor_of<int32_t>({}, {-1})});
  EXPECT_EQ(test::values<int32_t>(rows[0]), (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  expect_error(node_of(Op::CumSum, 14), {x, make_i64({}, {1})}, "out of range");
}

TEST(RefIndex, OneHotNegativeAndOutOfRangeIndices) {
  Tensor values = make({2}, {0, 5});
  Tensor depth = make({}, {3.7f});  // truncated to 3
  auto y = run(node_of(Op::OneHot, 11), {make_i64({4}, {0, -1, 3, -4}), depth, values});
  // -1 counts from the end; 3 and -4 are outside [-3, 3): all-off rows.
  expect_values(y[0], {4, 3}, {5, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0});
  auto t = run(node_of(Op::OneHot, 11, {{"axis", int64_t{0}}}), {make({2}, {1.9f, 0}), depth, values});
  expect_values(t[0], {3, 2}, {0, 5, 5, 0, 0, 0});
  auto ints =
      run(node_of(Op::OneHot, 9), {make_i64({1}, {1}), make_i64({1}, {2}), test::tensor_of<int32_t>({2}, {-1, 1})});
  EXPECT_EQ(test::values<int32_t>(ints[0]), (std::vector<int32_t>{-1, 1}));
  expect_error(node_of(Op::OneHot, 11), {make_i64({1}, {0}), make({}, {0}), values}, "depth must be >= 1, got 0");
  expect_error(node_of(Op::OneHot, 11), {make_i64({2}, {0, 1}), make({}, {1e15f}), values}, "too large");
  expect_error(node_of(Op::OneHot, 11, {{"axis", int64_t{2}}}), {make_i64({1}, {0}), depth, values}, "out of range");
  expect_error(node_of(Op::OneHot, 11), {make_i64({1}, {0}), depth, make({3}, {0, 1, 2})}, "two elements");
}

TEST(RefIndex, SizeCountsElements) {
  auto y = run(node_of(Op::Size, 21), {make({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(y[0].dims(), Dims{});
  EXPECT_EQ(y[0].data<int64_t>()[0], 6);
  EXPECT_EQ(run(node_of(Op::Size, 13), {make({0, 4}, {})})[0].data<int64_t>()[0], 0);
}

}  // namespace
}  // namespace fusor
