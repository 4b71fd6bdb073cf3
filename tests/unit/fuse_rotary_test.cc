// fuse_rotary and the Rotary kernel: the rotate-half rotary embedding as transformers exports it
// becomes one step that computes what its seven nodes compute, on several shapes and
// table broadcasts; near misses stay unfused and correct; and the real LLaMA export's query and
// key rotations all fuse.
#include <gtest/gtest.h>

#include "fusor/decoder.h"
#include "kernels/cpu/common.h"
#include "fused_vs_reference.h"
#include "llama_tiny.h"
#include "rotary_graph.h"

namespace fusor {
namespace {

// Angles per (position, pair) as a rotary table has them, so that cos^2 + sin^2 = 1.
test::Feeds rotary_feeds(const test::RotarySpec& s, const Dims& x) {
  Tensor cos(DType::Float32, s.table), sin(DType::Float32, s.table);
  for (int64_t i = 0; i < cos.numel(); ++i) {
    const float angle = 0.37f * static_cast<float>(i / s.dim + 1) * static_cast<float>(i % (s.dim / 2) + 1);
    cos.data<float>()[i] = std::cos(angle);
    sin.data<float>()[i] = std::sin(angle);
  }
  test::Feeds feeds{{"x", test::random_normal(x, 1.5f, 7)}, {"cos", cos}, {"sin", sin}};
  if (s.other_upper) feeds["other"] = test::random_normal(x, 1.5f, 8);
  return feeds;
}

struct RotaryCase {
  test::RotarySpec spec;
  Dims x;
};

class FuseRotary : public ::testing::TestWithParam<RotaryCase> {};

TEST_P(FuseRotary, BecomesOneKernelWithTheSameNumbers) {
  const RotaryCase& c = GetParam();
  auto r = test::expect_fused_matches_reference(test::rotary_graph(c.spec), rotary_feeds(c.spec, c.x));
  EXPECT_EQ(test::steps_of_kind(r.fused, "Rotary"), 1u) << r.kernels();
  EXPECT_EQ(r.fused.steps.size(), 1u) << r.kernels();
  EXPECT_EQ(r.fused.steps[0].kernel->name(), std::string("rotary_f32_") + cpu::kIsa);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FuseRotary,
    ::testing::Values(
        // LLaMA's: [batch, heads, tokens, 64], one table row per token shared by the heads.
        RotaryCase{{.dim = 64, .table = {1, 1, 5, 64}}, {1, 4, 5, 64}},
        // a [tokens, D] table under [batch, heads, tokens, D]; half of 40 is a vector and a tail
        RotaryCase{{.dim = 40, .table = {7, 40}}, {2, 3, 7, 40}},
        // half of 6 is less than a vector; a table per head and token, nothing broadcast
        RotaryCase{{.dim = 6, .table = {2, 3, 6}}, {2, 3, 6}},
        // exported with the products' operands the other way round
        RotaryCase{{.dim = 16, .table = {1, 1, 3, 16}, .operands_swapped = true}, {1, 2, 3, 16}},
        // two sequences: a table row per (sequence, token), broadcast over the heads between them
        RotaryCase{{.dim = 8, .table = {2, 1, 3, 8}}, {2, 4, 3, 8}},
        // opset 9: the halves as Slice attributes, the upper one from -h
        RotaryCase{{.dim = 8, .table = {3, 8}, .opset9 = true}, {2, 3, 8}}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// A look-alike computes something else, or something the kernel does not; it stays as exported
// (the elementwise pass takes its multiply-add) and gives the reference's numbers.
struct NearMiss {
  const char* what;
  test::RotarySpec spec;
  Dims x;
};

class RotaryNearMiss : public ::testing::TestWithParam<NearMiss> {};

TEST_P(RotaryNearMiss, StaysUnfusedAndCorrect) {
  const NearMiss& c = GetParam();
  SCOPED_TRACE(c.what);
  auto r = test::expect_fused_matches_reference(test::rotary_graph(c.spec), rotary_feeds(c.spec, c.x));
  EXPECT_EQ(test::steps_of_kind(r.fused, "Rotary"), 0u) << r.kernels();
}

INSTANTIATE_TEST_SUITE_P(
    Forms, RotaryNearMiss,
    ::testing::Values(NearMiss{"split off the middle", {.dim = 8, .table = {5, 8}, .split = 3}, {2, 5, 8}},
                      NearMiss{"Concat(x1, -x2): the other rotation", {.dim = 8, .table = {5, 8}, .halves_swapped = true}, {2, 5, 8}},
                      NearMiss{"the lower half negated", {.dim = 8, .table = {5, 8}, .lower_negated = true}, {2, 5, 8}},
                      NearMiss{"one cos per row, not per element", {.dim = 8, .table = {5, 1}}, {2, 5, 8}},
                      NearMiss{"the halves of two tensors", {.dim = 8, .table = {5, 8}, .other_upper = true}, {2, 5, 8}}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

// fusion.fuse_rotary off keeps the exported form.
TEST(FuseRotarySwitch, OffKeepsTheExportedNodes) {
  const test::RotarySpec spec{.dim = 8, .table = {5, 8}};
  FusionConfig off;
  off.fuse_rotary = false;
  auto r = test::expect_fused_matches_reference(test::rotary_graph(spec), rotary_feeds(spec, {2, 5, 8}), off);
  EXPECT_EQ(test::steps_of_kind(r.fused, "Rotary"), 0u) << r.kernels();
}

// The real export: every layer's query and key rotation is one Rotary step, in prompt and decode
// steps alike, and nothing of the exported form (Neg, the half slices) is left.
TEST(FuseRotary, LlamaTinyRotatesQueriesAndKeysInOneKernelEach) {
  DecoderBatch batch(test::llama_tiny_engine(), test::llama_tiny_spec());
  batch.set_profiling(true);
  const auto sequence = batch.add();
  const std::vector<TokenId> prompt_ids = test::prompt_ids(12, 1), next_ids = test::prompt_ids(1, 2);
  const DecoderBatch::Feed prompt{sequence, prompt_ids}, next{sequence, next_ids};
  batch.step({&prompt, 1});
  batch.step({&next, 1});
  const GenerationProfile p = batch.profile();
  for (const StepKindProfile* k : {&p.prompt, &p.decode}) {
    ASSERT_EQ(k->steps, 1);
    int64_t rotary = 0;
    for (const KernelTime& t : k->kernels) {
      if (t.op == "Rotary") rotary += t.calls;
      EXPECT_NE(t.op, "Neg") << t.kernel;
    }
    EXPECT_EQ(rotary, 2 * test::llama_tiny_spec().layers);
  }
}

}  // namespace
}  // namespace fusor
