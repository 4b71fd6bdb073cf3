// What one generation step feeds (serve/step_composition.h): decodes first, prompt chunks best
// class first within each class's prefill_chunk, and a better class's prompt step kept short.
#include <gtest/gtest.h>

#include "serve/step_composition.h"

namespace fusor::serve {
namespace {

using Tokens = std::vector<int64_t>;
constexpr int64_t kInteractive = 0, kBatch = 1;  // class ids and priorities alike here

StepCandidate decode(int64_t cls) { return {cls, cls, cls == kBatch ? 64 : 0, 1}; }
StepCandidate prompt(int64_t cls, int64_t left) { return {cls, cls, cls == kBatch ? 64 : 0, left}; }

TEST(StepComposition, DecodesRunBesideTheirOwnClassesPrompt) {
  const std::vector<StepCandidate> order = {decode(kBatch), decode(kBatch), prompt(kBatch, 100)};
  EXPECT_EQ(compose_tokens(order, 256), (Tokens{1, 1, 64}));  // the batch prompt: its 64-token chunk
}

TEST(StepComposition, AnInteractivePromptStepCarriesNoBatchDecodeOrPrompt) {
  const std::vector<StepCandidate> order = {prompt(kInteractive, 32), decode(kBatch), decode(kBatch),
                                            prompt(kBatch, 100)};
  EXPECT_EQ(compose_tokens(order, 256), (Tokens{32, 0, 0, 0}));
}

TEST(StepComposition, InteractiveDecodesStayBesideAnInteractivePrompt) {
  const std::vector<StepCandidate> order = {decode(kInteractive), prompt(kInteractive, 40), decode(kBatch)};
  EXPECT_EQ(compose_tokens(order, 256), (Tokens{1, 40, 0}));
}

TEST(StepComposition, TheStepBudgetBoundsDecodesAndPrompts) {
  const std::vector<StepCandidate> order = {decode(kInteractive), decode(kInteractive), prompt(kInteractive, 500),
                                            prompt(kInteractive, 500)};
  EXPECT_EQ(compose_tokens(order, 100), (Tokens{1, 1, 98, 0}));
  EXPECT_EQ(compose_tokens(order, 1), (Tokens{1, 0, 0, 0}));
}

TEST(StepComposition, AClassesChunkIsSharedByItsPrompts) {
  const std::vector<StepCandidate> order = {prompt(kBatch, 40), prompt(kBatch, 40), prompt(kBatch, 40)};
  EXPECT_EQ(compose_tokens(order, 256), (Tokens{40, 24, 0}));  // 64 prompt tokens per step in all
}

TEST(StepComposition, WithNoPromptEveryDecodeRuns) {
  const std::vector<StepCandidate> order = {decode(kInteractive), decode(kBatch), decode(kBatch)};
  EXPECT_EQ(compose_tokens(order, 256), (Tokens{1, 1, 1}));
}

TEST(StepComposition, AWorseClassUsesItsContendedChunkOnlyWhileABetterOneIsBusy) {
  const ClassActivity batch{1, 64, 16, true}, interactive_busy{0, 0, 0, true}, interactive_idle{0, 0, 0, false},
      other_batch_busy{1, 0, 0, true};
  EXPECT_EQ(prefill_chunk_for(batch, std::vector{interactive_busy, batch}), 16);
  EXPECT_EQ(prefill_chunk_for(batch, std::vector{interactive_idle, batch}), 64);
  EXPECT_EQ(prefill_chunk_for(batch, std::vector{other_batch_busy, batch}), 64) << "an equal class is not better";
  const ClassActivity no_contended{1, 64, 0, true};
  EXPECT_EQ(prefill_chunk_for(no_contended, std::vector{interactive_busy, no_contended}), 64);
  const ClassActivity interactive{0, 32, 8, true};
  EXPECT_EQ(prefill_chunk_for(interactive, std::vector{interactive, batch}), 32) << "nothing is better than it";
}

}  // namespace
}  // namespace fusor::serve
