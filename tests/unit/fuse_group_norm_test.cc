// fuse_group_norm and the GroupNorm kernel: the exported GroupNorm (+ SiLU) becomes one step that
// computes what its nodes compute, on several shapes; near misses stay unfused and correct.
#include <gtest/gtest.h>

#include "kernels/cpu/common.h"
#include "fused_vs_reference.h"
#include "group_norm_graph.h"

namespace fusor {
namespace {

size_t count_kind(const Plan& p, const std::string& kind) {
  size_t n = 0;
  for (const Step& s : p.steps) n += p.graph->nodes[static_cast<size_t>(s.node)].op_type == kind;
  return n;
}

std::string kernel_of_kind(const Plan& p, const std::string& kind) {
  for (const Step& s : p.steps)
    if (p.graph->nodes[static_cast<size_t>(s.node)].op_type == kind) return s.kernel->name();
  return {};
}

struct Shape4 {
  test::GroupNormSpec spec;
  Dims x;
  const char* kernel;
};

class FuseGroupNorm : public ::testing::TestWithParam<Shape4> {};

TEST_P(FuseGroupNorm, BecomesOneKernelWithTheSameNumbers) {
  const Shape4& c = GetParam();
  auto g = test::group_norm_graph(c.spec);
  // Values far from zero: the variance is taken around the mean, not from the sum of squares.
  auto r = test::expect_fused_matches_reference(g, {{"x", test::group_norm_values(c.x, 2.0f, 30.0f)}});
  EXPECT_EQ(count_kind(r.fused, "GroupNorm"), 1u) << r.kernels();
  EXPECT_EQ(kernel_of_kind(r.fused, "GroupNorm"), std::string(c.kernel) + "_f32_" + cpu::kIsa);
  EXPECT_EQ(r.fused.steps.size(), 1u) << r.kernels();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FuseGroupNorm,
    ::testing::Values(Shape4{{}, {2, 8, 5, 7}, "groupnorm_silu"},                          // odd plane, vector tails
                      Shape4{{.silu = false}, {1, 8, 16, 16}, "groupnorm"},                // no activation
                      Shape4{{.channels = 16, .groups = 16}, {3, 16, 4, 4}, "groupnorm_silu"},  // one channel a group
                      Shape4{{.channels = 6, .groups = 1, .spatial_rank = 1}, {2, 6, 9}, "groupnorm_silu"}),      // 1-D, one group
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(FuseGroupNormNearMiss, ScalarGammaIsDeclinedWithItsReasonAndStaysCorrect) {
  auto g = test::group_norm_graph({.gamma_scalar = true});
  auto r = test::expect_fused_matches_reference(g, {{"x", test::group_norm_values({2, 8, 4, 4}, 1.0f, 0.0f)}});
  EXPECT_EQ(count_kind(r.fused, "GroupNorm"), 0u);
  bool named = false;
  for (const NotFused& nf : r.fused.fusion.not_fused) named = named || nf.reason.find("per channel") != std::string::npos;
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace fusor
