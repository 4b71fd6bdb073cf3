// NaN in, NaN out: the fast kernels propagate NaN like the reference does (Highway's Ne is an
// ordered compare, so a NaN test must be written as !(x == x)).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/backend.h"
#include "plan/plan.h"
#include "runtime/executor.h"
#include "graph_builder.h"

namespace fusor {
namespace {

class NanPropagation : public ::testing::TestWithParam<Op> {};

TEST_P(NanPropagation, FastKernelGivesNaNForNaN) {
  test::GraphBuilder b;
  auto g = b.finish({b.node(GetParam(), {b.input("x")}, "y")});
  Tensor x(DType::Float32, {64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = i % 3 == 0 ? NAN : 0.25f * static_cast<float>(i % 5);
  Plan plan = build_plan(g, {{"x", {64}}}, {.backend = &cpu::backend()});
  Tensor y = Executor(plan).run({x})[0];
  for (int64_t i = 0; i < y.numel(); ++i)
    if (i % 3 == 0) EXPECT_TRUE(std::isnan(y.data<float>()[i])) << op_info(GetParam()).name << " at " << i;
}

// ThresholdedRelu and Shrink are the exceptions: the spec's formulas give 0 "otherwise", NaN
// included, and so do ONNX Runtime and onnx.reference.
TEST(NanPropagation, ThresholdedReluAndShrinkGiveZeroForNaNAsTheSpec) {
  for (Op op : {Op::ThresholdedRelu, Op::Shrink}) {
    test::GraphBuilder b;
    auto g = b.finish({b.node(op, {b.input("x")}, "y")});
    Tensor x(DType::Float32, {19});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = i % 3 == 0 ? NAN : 5.f;
    for (bool fast : {true, false}) {
      Plan plan = build_plan(g, {{"x", {19}}}, {.kernels = fast ? KernelChoice::Fast : KernelChoice::Reference, .backend = &cpu::backend()});
      Tensor y = Executor(plan).run({x})[0];
      for (int64_t i = 0; i < y.numel(); i += 3)
        EXPECT_EQ(y.data<float>()[i], 0.f) << op_info(op).name << (fast ? " (fast)" : " (reference)") << " at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, NanPropagation,
                         ::testing::Values(Op::Exp, Op::Log, Op::Erf, Op::Tanh, Op::Sigmoid, Op::Softplus, Op::Mish, Op::Elu,
                                           Op::Relu, Op::LeakyRelu, Op::Floor, Op::Ceil, Op::Round, Op::Sign, Op::Sin,
                                           Op::Cos, Op::Tan, Op::Asin, Op::Acos, Op::Atan, Op::Sinh, Op::Cosh, Op::Asinh,
                                           Op::Acosh, Op::Atanh, Op::Selu, Op::Celu, Op::Softsign, Op::Clip,
                                           Op::HardSigmoid, Op::HardSwish),
                         [](const auto& info) { return std::string(op_info(info.param).name); });

}  // namespace
}  // namespace fusor
