// Which threads a plan's parallel work runs on: the pool, unless some step's kernel runs on an
// OpenMP team (oneDNN GEMMs too small to split, convolutions, reference kernels); then all of it
// runs on the team, so one set of threads stays hot.
#include <gtest/gtest.h>

#include "kernels/cpu/backend.h"
#include "kernels/cpu/thread_pool.h"
#include "plan/plan.h"
#include "graph_builder.h"

namespace fusor {
namespace {

// y = x W for x [rows, 256], W [256, cols]: one GEMM with constant weights, or weights given at
// run time.
Plan gemm_plan(int64_t rows, KernelChoice kernels, int64_t cols = 256, bool runtime_weights = false) {
  test::GraphBuilder b;
  Tensor w(DType::Float32, {256, cols});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 7) * 0.01f;
  auto g = b.finish({b.node(Op::MatMul, {b.input("x"), runtime_weights ? b.input("w") : b.constant("w", w)}, "y")});
  std::map<std::string, Dims> shapes{{"x", {rows, 256}}};
  if (runtime_weights) shapes["w"] = {256, cols};
  return build_plan(g, shapes, {.kernels = kernels, .backend = &cpu::backend()});
}

TEST(PlanThreads, APlanOfPoolKernelsRunsOnThePool) {
  if (cpu::thread_width() < 2) GTEST_SKIP() << "one thread: no GEMM is split";
  EXPECT_FALSE(gemm_plan(512, KernelChoice::Fast).openmp_team);
}

// 24 rows by 64 columns: too few rows for two row chunks, too few columns for two column blocks,
// too many rows for the few-row GEMM (up to 16 rows, which runs on the pool). Weights given at
// run time, which no kernel of fusor's own packs (constant ones run on the pool on AVX2 hosts).
TEST(PlanThreads, AGemmTooSmallToSplitPutsThePlanOnOpenmp) {
  EXPECT_TRUE(gemm_plan(24, KernelChoice::Fast, 64, /*runtime_weights=*/true).openmp_team);
}

TEST(PlanThreads, ReferencePlansRunOnOpenmp) {
  EXPECT_TRUE(gemm_plan(512, KernelChoice::Reference).openmp_team);
}

}  // namespace
}  // namespace fusor
