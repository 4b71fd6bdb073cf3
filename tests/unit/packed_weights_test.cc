// The process-wide caches of packed constant weights (kernels/cpu/packed_weights.h: oneDNN's
// layouts, and those kernels derive themselves, as PanelGemm's panels on AVX2): plans of one
// graph at different shapes share each packed weight, a constant rebuilt with equal bytes finds
// the buffer packed before while an equal-sized different one does not, entries go with the last
// plan that holds them, and every plan still computes what the reference plan computes.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "fused_vs_reference.h"
#include "graph_builder.h"
#include "kernels/cpu/packed_weights.h"

namespace fusor {
namespace {

using cpu::packed_weight_cache_stats;
using cpu::weight_cache_stats;
using test::GraphBuilder;

Tensor weight(Dims dims, uint32_t seed) {
  return test::random_normal(dims, 1.f / std::sqrt(static_cast<float>(dims[0])), seed);
}

// x [M, 64] -> Q/K/V projections (merged into one GEMM against a weight concatenated per plan),
// Gemm with alpha (its B scaled per plan), and a MatMul after the Gemm.
std::shared_ptr<Graph> projections(uint32_t seed) {
  GraphBuilder b;
  int x = b.input("x");
  std::vector<int> outs;
  for (const auto& [name, n] : std::vector<std::pair<std::string, int64_t>>{{"q", 32}, {"k", 32}, {"v", 48}})
    outs.push_back(b.node(Op::MatMul, {x, b.constant("W" + name, weight({64, n}, seed++))}, name));
  int g = b.node(Op::Gemm, {x, b.constant("Wg", weight({40, 64}, seed++))}, "g", DType::Float32,
                 {{"transB", int64_t{1}}, {"alpha", 0.5f}});
  outs.push_back(b.node(Op::MatMul, {g, b.constant("Wh", weight({40, 24}, seed++))}, "h"));
  return b.finish(outs);
}

size_t packed_steps(const Plan& p) {
  size_t n = 0;
  for (const Step& s : p.steps) n += test::has_packed_gemm(s.kernel->name(), "");
  return n;
}

TEST(PackedWeights, PlansAtTwoShapesShareThemAndFreeThemWithTheLastPlan) {
  const auto before = weight_cache_stats();
  auto g = projections(1);
  {
    auto small = test::expect_fused_matches_reference(g, {{"x", test::random_normal({16, 64}, 1.f, 10)}});
    const size_t packed = packed_steps(small.fused);
    EXPECT_EQ(packed, 3u) << small.kernels();  // merged Q/K/V, the Gemm, the MatMul after it
    EXPECT_NE(small.kernels().find("merged3"), std::string::npos) << small.kernels();
    EXPECT_TRUE(test::has_packed_gemm(small.kernels(), "gemm_f32")) << small.kernels();
    const auto after_small = weight_cache_stats();
    EXPECT_EQ(after_small.entries, before.entries + packed);
    EXPECT_EQ(after_small.packs, before.packs + packed);
    const size_t weight_bytes = (64 * (32 + 32 + 48) + 40 * 64 + 40 * 24) * sizeof(float);
    EXPECT_GE(after_small.bytes - before.bytes, weight_bytes);

    auto large = test::expect_fused_matches_reference(g, {{"x", test::random_normal({128, 64}, 1.f, 11)}});
    EXPECT_EQ(packed_steps(large.fused), packed) << large.kernels();
    const auto after_large = weight_cache_stats();
    EXPECT_EQ(after_large.entries, after_small.entries);
    EXPECT_EQ(after_large.bytes, after_small.bytes);
    EXPECT_EQ(after_large.packs, after_small.packs);
    EXPECT_EQ(after_large.hits, after_small.hits + packed);
    EXPECT_EQ(after_large.bytes_reused - after_small.bytes_reused, after_small.bytes - before.bytes);

    // The first plan still computes the same after the second took its weights.
    test::Feeds again = {{"x", test::random_normal({16, 64}, 1.f, 12)}};
    EXPECT_TRUE(test::outputs_agree(test::run_plan(small.fused, again), test::run_plan(small.reference, again)));
  }
  const auto after = weight_cache_stats();
  EXPECT_EQ(after.entries, before.entries);
  EXPECT_EQ(after.bytes, before.bytes);
}

TEST(PackedWeights, AnotherGraphWithEqualWeightsHitsAndWithOtherWeightsPacks) {
  const auto before = weight_cache_stats();
  const test::Feeds feeds = {{"x", test::random_normal({8, 64}, 1.f, 13)}};
  auto first = test::expect_fused_matches_reference(projections(1), feeds);
  const auto after_first = weight_cache_stats();
  const size_t packed = after_first.packs - before.packs;
  ASSERT_GT(packed, 0u);
  // Equal values in buffers of their own: every weight found by its bytes.
  auto equal = test::expect_fused_matches_reference(projections(1), feeds);
  const auto after_equal = weight_cache_stats();
  EXPECT_EQ(after_equal.entries, after_first.entries);
  EXPECT_EQ(after_equal.hits, after_first.hits + packed);
  // Same shapes, other values: nothing shared, and the outputs are its own.
  auto other = test::expect_fused_matches_reference(projections(100), feeds);
  const auto after_other = weight_cache_stats();
  EXPECT_EQ(after_other.entries, after_equal.entries + packed);
  EXPECT_EQ(after_other.hits, after_equal.hits);
  EXPECT_FALSE(test::outputs_agree(other.fused_outputs, first.fused_outputs));
}

// Directly: equal bytes share, one changed float does not, another packed layout does not.
TEST(PackedWeights, KeyIsTheBytesAndBothLayouts) {
  using dnnl::memory;
  const auto before = packed_weight_cache_stats();
  const memory::desc plain({64, 48}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc transposed({64, 48}, memory::data_type::f32, memory::format_tag::ba);
  Tensor w = weight({64, 48}, 7), copy = weight({64, 48}, 7), changed = weight({64, 48}, 7);
  changed.data<float>()[64 * 48 - 1] += 1.f;
  {
    auto a = cpu::packed_weights(w.data<float>(), plain, transposed);
    const float* packed = static_cast<const float*>(a->memory().get_data_handle());
    for (int64_t k = 0; k < 64; ++k)
      for (int64_t n = 0; n < 48; ++n) ASSERT_EQ(packed[n * 64 + k], w.data<float>()[k * 48 + n]);
    auto b = cpu::packed_weights(copy.data<float>(), plain, transposed);
    EXPECT_EQ(a, b);
    auto c = cpu::packed_weights(changed.data<float>(), plain, transposed);
    EXPECT_NE(a, c);
    auto d = cpu::packed_weights(w.data<float>(), plain, plain);
    EXPECT_NE(a, d);
    const auto s = packed_weight_cache_stats();
    EXPECT_EQ(s.entries, before.entries + 3);
    EXPECT_EQ(s.bytes, before.bytes + 3 * 64 * 48 * sizeof(float));
    EXPECT_EQ(s.hits, before.hits + 1);
  }
  EXPECT_EQ(packed_weight_cache_stats().entries, before.entries);
}

// The server builds plans on several threads at once: each weight is still packed once.
TEST(PackedWeights, PlansBuiltOnSeveralThreadsPackEachWeightOnce) {
  const auto before = weight_cache_stats();
  auto g = projections(40);
  std::vector<Plan> plans(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < plans.size(); ++i)
    threads.emplace_back([&, i] { plans[i] = test::fast_plan(g, {{"x", {static_cast<int64_t>(8 << i), 64}}}); });
  for (auto& t : threads) t.join();
  const auto after = weight_cache_stats();
  EXPECT_EQ(after.entries - before.entries, packed_steps(plans[0]));
  EXPECT_EQ(after.packs - before.packs, packed_steps(plans[0]));
  for (size_t i = 0; i < plans.size(); ++i) {
    test::Feeds feeds = {{"x", test::random_normal({static_cast<int64_t>(8 << i), 64}, 1.f, 50)}};
    EXPECT_TRUE(test::outputs_agree(test::run_plan(plans[i], feeds),
                                    test::run_plan(test::reference_plan(g, test::dims_of(feeds)), feeds)));
  }
}

// A convolution's packed weights, shared between plans at two batch sizes.
TEST(PackedWeights, ConvolutionPlansAtTwoBatchSizesShareThem) {
  GraphBuilder b;
  int x = b.input("x");
  // Stride 2: a stride-1 3x3 layer may run as Winograd, whose weights are shared on their own
  // (conv_winograd_test.cc).
  int y = b.node(Op::Conv, {x, b.constant("W", weight({16, 8, 3, 3}, 60)), b.constant("B", weight({16}, 61))}, "y",
                 DType::Float32, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});
  auto g = b.finish({y});
  const auto before = weight_cache_stats();
  auto one = test::expect_fused_matches_reference(g, {{"x", test::random_normal({1, 8, 12, 12}, 1.f, 62)}});
  auto three = test::expect_fused_matches_reference(g, {{"x", test::random_normal({3, 8, 12, 12}, 1.f, 63)}});
  EXPECT_EQ(packed_steps(one.fused), 1u) << one.kernels();
  const auto after = weight_cache_stats();
  EXPECT_EQ(after.entries, before.entries + 1);
  EXPECT_EQ(after.hits, before.hits + 1);
}

// A stride-1 3x3 layer of 16-channel multiples runs as Winograd: oneDNN's on AVX-512, whose
// transformed weights oneDNN cannot reorder back out of, fusor's own on AVX2. A second plan at the
// same shape (a server's second context) still runs it, on the first plan's weights; before, it
// fell back to the reference convolution.
TEST(PackedWeights, WinogradConvolutionPlansShareTheirWeights) {
  GraphBuilder b;
  int x = b.input("x");
  int y = b.node(Op::Conv, {x, b.constant("W", weight({32, 16, 3, 3}, 70)), b.constant("B", weight({32}, 71))}, "y",
                 DType::Float32, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  auto g = b.finish({y});
  const auto before = weight_cache_stats();
  auto first = test::expect_fused_matches_reference(g, {{"x", test::random_normal({1, 16, 14, 14}, 1.f, 72)}});
  auto second = test::expect_fused_matches_reference(g, {{"x", test::random_normal({1, 16, 14, 14}, 1.f, 73)}});
  for (const auto* plans : {&first, &second}) {
    EXPECT_NE(plans->kernels().find("winograd"), std::string::npos) << plans->kernels();
    EXPECT_EQ(plans->kernels().find("ref."), std::string::npos) << plans->kernels();
  }
  EXPECT_EQ(weight_cache_stats().hits, before.hits + 1);
}

}  // namespace
}  // namespace fusor
