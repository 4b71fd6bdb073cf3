// fuse_group_norm and the GroupNorm kernel: the exported GroupNorm (+ SiLU) becomes one step that
// computes what its nodes compute, on several shapes; near misses stay unfused and correct.
#include <gtest/gtest.h>

#include "kernels/cpu/backend.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/onednn_plain_io.h"
#include "passes/fused_kinds.h"
#include "fused_vs_reference.h"
#include "group_norm_graph.h"

namespace fusor {
namespace {

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
  EXPECT_EQ(test::steps_of_kind(r.fused, "GroupNorm"), 1u) << r.kernels();
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

// In oneDNN's channel-blocked layout (nChw16c, what the convolutions around U-Net's norms write
// on AVX-512) the kernel computes what it computes row-major: groups within a block of 16
// channels, equal to one, and across blocks.
TEST(GroupNormKernel, ChannelBlockedLayoutGivesTheRowMajorResult) {
  if (std::string(cpu::kIsa) != "avx512") GTEST_SKIP() << "the 16-channel blocks are AVX-512 vectors";
  const Dims dims = {2, 32, 5, 7};
  for (int64_t groups : {8, 2, 1}) {
    SCOPED_TRACE(groups);
    const Node node = test::fused_group_norm_node(groups, true);
    std::vector<Tensor> in = {test::group_norm_values(dims, 2.0f, 3.0f), test::group_norm_values({groups}, 0.3f, 1.0f),
                              test::group_norm_values({groups}, 0.2f, 0.1f), test::group_norm_values({32, 1, 1}, 0.5f, 1.0f),
                              test::group_norm_values({32, 1, 1}, 0.4f, 0.0f)};
    std::vector<TensorType> types;
    for (const Tensor& t : in) types.push_back({DType::Float32, t.dims()});
    const std::vector<const Tensor*> consts = {nullptr, &in[1], &in[2], &in[3], &in[4]};
    const std::vector<TensorType> out_types = {{DType::Float32, dims}};
    auto make = [&] { return cpu::backend().select(KernelRequest{node, types, consts, out_types}).kernel; };
    auto plain = make(), blocked = make();
    ASSERT_NE(plain, nullptr);
    const std::string layout = cpu::onednn_layout_name(
        dnnl::memory::desc({2, 32, 5, 7}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::aBcd16b));
    ASSERT_TRUE(blocked->follows_layout(layout));
    const std::vector<std::string> in_layouts = {layout, "", "", "", ""};
    blocked->use_layouts(in_layouts, true);

    std::vector<Tensor> want = {Tensor(DType::Float32, dims)}, got = {Tensor(DType::Float32, dims)};
    plain->run(in, want, {});
    std::vector<Tensor> blocked_in = in;  // x in nChw16c: [n][c / 16][h][w][c % 16]
    blocked_in[0] = Tensor(DType::Float32, dims);  // its own buffer (copies share theirs)
    const float* x = in[0].data<float>();
    float* xb = blocked_in[0].data<float>();
    const int64_t hw = 35;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 32; ++c)
        for (int64_t i = 0; i < hw; ++i) xb[((n * 32 + c / 16 * 16) * hw + i * 16) + c % 16] = x[(n * 32 + c) * hw + i];
    std::vector<Tensor> stored = {Tensor(DType::Float32, dims)};
    blocked->run(blocked_in, stored, {});
    blocked->output_to_plain(stored[0], got[0]);
    EXPECT_TRUE(test::outputs_agree(got, want));
  }
}

TEST(FuseGroupNormNearMiss, ScalarGammaIsDeclinedWithItsReasonAndStaysCorrect) {
  auto g = test::group_norm_graph({.gamma_scalar = true});
  auto r = test::expect_fused_matches_reference(g, {{"x", test::group_norm_values({2, 8, 4, 4}, 1.0f, 0.0f)}});
  EXPECT_EQ(test::steps_of_kind(r.fused, "GroupNorm"), 0u);
  bool named = false;
  for (const NotFused& nf : r.fused.fusion.not_fused) named = named || nf.reason.find("per channel") != std::string::npos;
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace fusor
