// Kernel times of a DecoderBatch's steps (DecoderBatch::set_profiling) on the real LLaMA-style
// export: off by default, decode steps counted apart from prompt steps, each layer's kernels
// called once per run, kernel time within the runs' wall time, the profile reset when turned on
// again and kept when turned off, and a profiled decode step still allocating nothing; then the
// table `fusor generate --profile` prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "fusor/decoder.h"
#include "fusor/profile.h"
#include "llama_tiny.h"

namespace fusor {
namespace {

const Engine& engine() { return test::llama_tiny_engine(); }
const DecoderSpec& spec() { return test::llama_tiny_spec(); }
std::vector<TokenId> ids(int n, int seed) { return test::prompt_ids(n, seed); }

// Two sequences: a step of both prompts, then `decode_steps` steps of one token each.
void run_two_sequences(DecoderBatch& batch, int decode_steps) {
  const auto a = batch.add(), b = batch.add();
  const std::vector<TokenId> pa = ids(20, 1), pb = ids(9, 2), next = ids(1, 3);
  const DecoderBatch::Feed prompts[2] = {{a, pa}, {b, pb}};
  batch.step(prompts);
  const DecoderBatch::Feed decodes[2] = {{a, next}, {b, next}};
  for (int i = 0; i < decode_steps; ++i) batch.step(decodes);
  batch.remove(a);
  batch.remove(b);
}

const KernelTime* find_op(const StepKindProfile& k, const std::string& op) {
  auto it = std::find_if(k.kernels.begin(), k.kernels.end(), [&](const KernelTime& t) { return t.op == op; });
  return it == k.kernels.end() ? nullptr : &*it;
}

double kernel_seconds(const StepKindProfile& k) {
  double s = 0;
  for (const KernelTime& t : k.kernels) s += t.seconds;
  return s;
}

TEST(GenerationProfile, CountsDecodeAndPromptStepsAndTheirKernels) {
  DecoderBatch batch(engine(), spec());
  run_two_sequences(batch, 2);
  EXPECT_EQ(batch.profile().decode.steps, 0);  // off by default
  EXPECT_EQ(batch.profile().prompt.steps, 0);

  batch.set_profiling(true);
  run_two_sequences(batch, 5);
  const GenerationProfile p = batch.profile();
  EXPECT_EQ(p.prompt.steps, 1);
  EXPECT_EQ(p.prompt.tokens, 29);
  EXPECT_EQ(p.decode.steps, 5);
  EXPECT_EQ(p.decode.tokens, 10);
  for (const StepKindProfile* k : {&p.decode, &p.prompt}) {
    const KernelTime* attention = find_op(*k, "CachedAttention");
    ASSERT_NE(attention, nullptr);
    EXPECT_EQ(attention->calls, spec().layers * k->steps);  // one per layer and run
    EXPECT_GT(kernel_seconds(*k), 0);
    EXPECT_LE(kernel_seconds(*k), k->seconds);
    EXPECT_TRUE(std::is_sorted(k->kernels.begin(), k->kernels.end(),
                               [](const KernelTime& x, const KernelTime& y) { return x.seconds > y.seconds; }));
  }

  batch.set_profiling(false);  // stops counting; what was counted stays
  run_two_sequences(batch, 3);
  EXPECT_EQ(batch.profile().decode.steps, 5);
  batch.set_profiling(true);  // from zero again
  EXPECT_EQ(batch.profile().decode.steps, 0);
  run_two_sequences(batch, 1);
  EXPECT_EQ(batch.profile().decode.steps, 1);
  EXPECT_EQ(batch.profile().prompt.steps, 1);
}

// A prompt longer than max_step_tokens counts once per chunk; a step stopped midway adds
// nothing, so every kernel has still run once per counted run.
TEST(GenerationProfile, CountsChunksAndLeavesOutAStoppedStep) {
  DecoderBatchOptions o;
  o.max_step_tokens = 16;
  DecoderBatch batch(engine(), spec(), {}, o);
  batch.set_profiling(true);
  const auto a = batch.add();
  const std::vector<TokenId> prompt = ids(160, 9);
  const DecoderBatch::Feed whole{a, prompt};
  ASSERT_TRUE(test::step_stopped_midway(batch, whole)) << "no attempt stopped the step while it ran";
  ASSERT_FALSE(batch.step({&whole, 1}).empty());
  const StepKindProfile prompts = batch.profile().prompt;
  EXPECT_GE(prompts.steps, 10);  // the last step's ten chunks, and those that finished before
  EXPECT_EQ(prompts.tokens, 16 * prompts.steps);
  const KernelTime* attention = find_op(prompts, "CachedAttention");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->calls, spec().layers * prompts.steps);
  EXPECT_LE(kernel_seconds(prompts), prompts.seconds);
}

TEST(GenerationProfile, AProfiledDecodeStepAllocatesNothing) {
  if (!test::counting_available()) GTEST_SKIP() << "allocation counting needs the plain allocator";
  DecoderBatch batch(engine(), spec());
  batch.set_profiling(true);
  const auto a = batch.add();
  const std::vector<TokenId> prompt = ids(5, 4), next = ids(1, 5);
  const DecoderBatch::Feed first{a, prompt}, decode{a, next};
  batch.step({&first, 1});
  batch.step({&decode, 1});  // the one-token plan and its times exist from here
  test::start_counting_allocations();
  for (int s = 0; s < 4; ++s) batch.step({&decode, 1});
  const test::AllocationCount n = test::stop_counting_allocations();
  EXPECT_EQ(n.fusor, 0);
  EXPECT_EQ(batch.profile().decode.steps, 5);
}

TEST(GenerationProfile, TableShowsEachKindAndFoldsTheRest) {
  GenerationProfile p;
  p.decode = {10, 10, 0.02, {{"matmul_a", "MatMul", 40, 0.012}, {"attention_b", "CachedAttention", 40, 0.004},
                             {"norm_c", "LayerNorm", 50, 0.001}}};
  const std::string table = generation_profile_table(p, 2);
  EXPECT_NE(table.find("decode steps: 10 (10 tokens), 0.020 s, 2.000 ms each; kernels 85.0% of it"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("12.000  60.0%       40      300.0  matmul_a (MatMul)"), std::string::npos) << table;
  EXPECT_NE(table.find("attention_b (CachedAttention)"), std::string::npos) << table;
  EXPECT_EQ(table.find("norm_c"), std::string::npos) << table;
  EXPECT_NE(table.find("(1 more kernel)"), std::string::npos) << table;
  EXPECT_NE(table.find("prompt steps: none"), std::string::npos) << table;
}

}  // namespace
}  // namespace fusor
