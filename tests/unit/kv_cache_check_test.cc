// The gate's kv_cache item on the tiny decoders in models/: the paged cache matches each sequence
// run alone through the unfused plain loop; a fault in the cached side's logits fails it and
// rolls kv_cache back, after which DecoderStep runs the plain loop; a model that is not a
// decoder is not applicable and runs nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "check/gate.h"
#include "fusor/decoder.h"

namespace fusor {
namespace {

std::string model(const std::string& name) { return std::string(FUSOR_SOURCE_DIR) + "/models/" + name + "/model.onnx"; }

#define NEED_MODEL(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not here (scripts/setup fetches it)"

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class KvCacheCheck : public testing::TestWithParam<std::string> {};

TEST_P(KvCacheCheck, CachedDecodingMatchesEachSequenceAloneUnfused) {
  const std::string file = model(GetParam());
  NEED_MODEL(file);
  KvCacheVerdict v = check_kv_cache(Engine::load(file), file, {});
  ASSERT_TRUE(v.applicable) << v.reason;
  ASSERT_TRUE(v.cached) << v.reason;
  EXPECT_TRUE(v.passed) << "worst " << v.vs_unfused.max_abs << " at " << v.worst << ", truth " << v.vs_truth.max_abs;
  ASSERT_EQ(v.sequences.size(), 3u);
  EXPECT_EQ(v.sequences[1], "prompt 17, joins at step 2, 6 decode steps");
  EXPECT_EQ(v.steps_compared, 3 * 7);  // the prompt's step and 6 decode steps, per sequence
  EXPECT_GT(v.vs_unfused.max_abs, 0);  // different kernels, so not bit-equal: the numbers were compared
  EXPECT_TRUE(v.vs_unfused.within && v.vs_truth.within);
}

INSTANTIATE_TEST_SUITE_P(TinyDecoders, KvCacheCheck, testing::Values("llama-tiny", "gpt2-tiny", "llama-tiny-merged"));

TEST(KvCacheCheckFault, AWrongCachedStepFailsAndRollsTheItemBack) {
  const std::string file = model("llama-tiny");
  NEED_MODEL(file);
  const Engine engine = Engine::load(file);
  KvCacheCheckOptions o;
  // As if the cache served the longest sequence a stale step mid-decode: step 4 gets step 3's logits.
  auto previous = std::make_shared<std::vector<float>>();
  o.corrupt_cached = [previous](int sequence, int step, std::span<float> logits) {
    if (sequence != 2) return;
    std::vector<float> fresh(logits.begin(), logits.end());
    if (step == 4) std::copy(previous->begin(), previous->end(), logits.begin());
    *previous = std::move(fresh);
  };
  KvCacheVerdict v = check_kv_cache(engine, file, o);
  ASSERT_TRUE(v.cached) << v.reason;
  EXPECT_FALSE(v.passed);
  EXPECT_FALSE(v.vs_unfused.within);
  EXPECT_EQ(v.worst, "sequence 2, step 4");
  EXPECT_GT(v.vs_unfused.max_abs, 1e-3);

  CheckReport report;
  add_kv_cache_item(report, v);
  EXPECT_TRUE(lists(report.rolled_back, "kv_cache"));
  EXPECT_TRUE(lists(report.final_fusion.disabled, "kv_cache"));
  // What a saved verdict does: the rolled-back item in fusion.disabled, DecoderStep off the cache.
  SessionOptions so;
  so.fusion = report.final_fusion;
  DecoderStep step(engine, DecoderSpec::describe(engine, file), so);
  EXPECT_FALSE(step.stats().kv_cache);
  // And the gate's own run sees it disabled: nothing cached, nothing to roll back again.
  KvCacheCheckOptions again;
  again.fusion = report.final_fusion;
  KvCacheVerdict w = check_kv_cache(engine, file, again);
  EXPECT_TRUE(w.applicable);
  EXPECT_FALSE(w.cached);
  EXPECT_NE(w.reason.find("kv_cache"), std::string::npos) << w.reason;
}

TEST(KvCacheCheckFault, APassingVerdictRollsNothingBack) {
  CheckReport report;
  KvCacheVerdict v;
  v.applicable = v.cached = v.passed = true;
  add_kv_cache_item(report, v);
  EXPECT_TRUE(report.rolled_back.empty());
  ASSERT_TRUE(report.kv_cache);
  EXPECT_TRUE(report.kv_cache->passed);
}

TEST(KvCacheCheckNotApplicable, AnEncoderRunsNothing) {
  const std::string file = model("minilm-l6");
  NEED_MODEL(file);
  KvCacheVerdict v = check_kv_cache(Engine::load(file), file, {});
  EXPECT_FALSE(v.applicable);
  EXPECT_FALSE(v.cached);
  EXPECT_FALSE(v.reason.empty());
  EXPECT_EQ(v.steps_compared, 0);
  CheckReport report;
  add_kv_cache_item(report, v);
  EXPECT_TRUE(report.rolled_back.empty());
}

TEST(KvCacheCheckNotApplicable, WithoutTheModelFileItSaysSo) {
  const std::string file = model("llama-tiny");
  NEED_MODEL(file);
  KvCacheVerdict v = check_kv_cache(Engine::load(file), "", {});
  EXPECT_FALSE(v.applicable);
  EXPECT_NE(v.reason.find("model file"), std::string::npos) << v.reason;
}

}  // namespace
}  // namespace fusor
