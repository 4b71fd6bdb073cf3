// The served decoder's iteration-level scheduler on the real LLaMA-style export
// (models/llama-tiny): many requests of two classes at once, with chunked prefill, give each the
// tokens it gets alone; a pool too small for them all preempts and recomputes without changing a
// token; a better class takes a worse one's place; cancels and refusals answer once and free the
// pool.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "fusor/generate.h"
#include "kernels/cpu/openmp_wait.h"
#include "kernels/cpu/thread_pool.h"
#include "llama_tiny.h"
#include "openmp_probe.h"
#include "serve/generation_stats.h"
#include "serve/generative_model.h"

namespace fusor::serve {
namespace {

const std::string kModel = test::kLlamaTiny + "/model.onnx";

const Engine& engine() { return test::llama_tiny_engine(); }

// Greedy tokens of `prompt` generated alone, the reference every scheduled request must match.
std::vector<TokenId> alone(const std::vector<TokenId>& prompt, int64_t max_new) {
  static DecoderStep step(engine(), test::llama_tiny_spec());
  step.reset();
  GenerateOptions o;
  o.max_new_tokens = max_new;
  o.ignore_eos = true;
  return generate(step, prompt, o).output_ids;
}

std::vector<TokenId> prompt_of(size_t i, size_t length) {
  std::vector<TokenId> p;
  for (size_t k = 0; k < length; ++k) p.push_back(static_cast<TokenId>(3 + (i * 131 + k * 17) % 8000));
  return p;
}

ServeConfig two_classes() {
  ServeConfig c;
  c.classes = {{"interactive", {}}, {"batch", {}}};
  c.classes["interactive"].priority = 0;
  c.classes["batch"].priority = 1;
  c.classes["batch"].prefill_chunk = 16;  // long prompts of this class run in chunks,
  c.classes["batch"].prefill_chunk_contended = 8;  // smaller ones while interactive work is about
  c.default_class = "interactive";
  c.step_tokens = 64;
  return c;
}

// A request's events gathered for the test: tokens as streamed, and the outcome.
struct Collected {
  std::mutex mu;
  std::vector<TokenId> streamed;
  std::vector<bool> last;  // per streamed token: whether it said it ends the generation
  std::string text;
  std::promise<GenerationOutcome> done;
  std::promise<void> first;
  bool first_set = false;
  GenerationEvents events() {
    return {[this](TokenId id, std::string_view t, bool is_last) {
              std::lock_guard lock(mu);
              streamed.push_back(id);
              last.push_back(is_last);
              text += t;
              if (!first_set) first_set = true, first.set_value();
            },
            [this](const GenerationOutcome& o) { done.set_value(o); }};
  }
};

GenerationRequest request(std::vector<TokenId> prompt, int64_t max_new, std::string cls = "") {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.options.max_new_tokens = max_new;
  r.options.ignore_eos = true;
  r.cls = std::move(cls);
  return r;
}

// The thread that builds a served decoder's plans packs weights in parallel regions; its idle
// OpenMP team would make libgomp sleep at every barrier of the scheduler's steps (thread_pool.h).
TEST(GenerationScheduler, TheThreadThatBuiltThePlansKeepsNoIdleOpenmpTeam) {
  if (*test::barrier_probe_unusable()) GTEST_SKIP() << test::barrier_probe_unusable();
  cpu::release_openmp_team();  // the runner's own: earlier tests ran plans on this thread
  cpu::set_openmp_wait(cpu::OpenmpWait::Spin);
  long sleeps = -1;
  std::string failed;
  std::thread([&] {
    // A team as wide as the machine on the building thread, as a loader with the whole budget
    // leaves: kept, it alone would put the process over libgomp's limit.
    const int cpus = omp_get_num_procs();
#pragma omp parallel num_threads(cpus)
    static_cast<void>(omp_get_thread_num());
    try {
      ServeConfig config = two_classes();
      config.step_tokens = 16;
      GenerativeModel model("llama", engine(), kModel, config, {}, 2);
      sleeps = test::fewest_barrier_sleeps(50);  // another team's barriers, while the model is up
    } catch (const std::exception& e) {
      failed = e.what();
    }
  }).join();
  ASSERT_EQ(failed, "");
  if (cpu::openmp_wait() == cpu::OpenmpWait::Sleep) GTEST_SKIP() << "the CPUs were contended: barriers sleep by design";
  EXPECT_LE(sleeps, 10);
}

TEST(GenerationScheduler, ManyRequestsOfTwoClassesEachGetTheirTokensAlone) {
  GenerativeModel model("llama", engine(), kModel, two_classes(), {}, 2);
  constexpr size_t kRequests = 10;
  std::vector<std::unique_ptr<Collected>> got;
  for (size_t i = 0; i < kRequests; ++i) {
    got.push_back(std::make_unique<Collected>());
    model.submit(request(prompt_of(i, 5 + 9 * i), 6 + static_cast<int64_t>(i % 4) * 5, i % 2 ? "batch" : "interactive"),
                 got.back()->events());
  }
  for (size_t i = 0; i < kRequests; ++i) {
    GenerationOutcome o = got[i]->done.get_future().get();
    ASSERT_TRUE(o.status.ok()) << o.status.message;
    EXPECT_EQ(o.finish_reason, "length");
    EXPECT_EQ(o.prompt_tokens, static_cast<int64_t>(5 + 9 * i));
    const std::vector<TokenId> want = alone(prompt_of(i, 5 + 9 * i), 6 + static_cast<int64_t>(i % 4) * 5);
    EXPECT_EQ(o.result.output_ids, want) << "request " << i;
    EXPECT_EQ(got[i]->streamed, want) << "request " << i;
    // Only the final token says it ends the generation (Triton marks its response final).
    std::vector<bool> last(want.size(), false);
    if (!last.empty()) last.back() = true;
    EXPECT_EQ(got[i]->last, last) << "request " << i;
    EXPECT_EQ(got[i]->text, o.result.text);
  }
  const GenerativeModel::Load load = model.load();
  EXPECT_EQ(load.running, 0);
  EXPECT_EQ(load.cache.blocks_used, 0);
  const auto stats = model.stats().snapshot();
  EXPECT_EQ(stats.at("interactive").finished.at("length") + stats.at("batch").finished.at("length"), kRequests);
  EXPECT_EQ(stats.at("batch").ttft.count, kRequests / 2);
  EXPECT_EQ(stats.at("interactive").running + stats.at("batch").running, 0);
}

TEST(GenerationScheduler, APoolTooSmallForAllPreemptsAndRecomputesWithoutChangingAToken) {
  ServeConfig config = two_classes();
  config.kv_cache_tokens = 16 * 12;  // 12 blocks; each request below grows to 5
  GenerativeModel model("llama", engine(), kModel, config, {}, 2);
  constexpr size_t kRequests = 6;
  std::vector<std::unique_ptr<Collected>> got;
  for (size_t i = 0; i < kRequests; ++i) {
    got.push_back(std::make_unique<Collected>());
    model.submit(request(prompt_of(i, 30), 40, "batch"), got.back()->events());
  }
  for (size_t i = 0; i < kRequests; ++i) {
    GenerationOutcome o = got[i]->done.get_future().get();
    ASSERT_TRUE(o.status.ok()) << o.status.message;
    const std::vector<TokenId> want = alone(prompt_of(i, 30), 40);
    EXPECT_EQ(o.result.output_ids, want) << "request " << i;
    EXPECT_EQ(got[i]->streamed, want) << "request " << i << ": a token streamed twice or lost";
  }
  EXPECT_GT(model.stats().snapshot().at("batch").preemptions, 0u);
  EXPECT_EQ(model.load().cache.blocks_used, 0);
}

TEST(GenerationScheduler, ABetterClassTakesTheOnlyPlaceFromAWorseOne) {
  ServeConfig config = two_classes();
  config.max_sequences = 1;
  GenerativeModel model("llama", engine(), kModel, config, {}, 2);
  Collected slow, urgent;
  model.submit(request(prompt_of(1, 20), 200, "batch"), slow.events());
  slow.first.get_future().wait();  // running now
  model.submit(request(prompt_of(2, 10), 5, "interactive"), urgent.events());
  GenerationOutcome u = urgent.done.get_future().get();
  auto slow_done = slow.done.get_future();
  EXPECT_EQ(slow_done.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the interactive request waited for the batch one";
  EXPECT_EQ(u.result.output_ids, alone(prompt_of(2, 10), 5));
  GenerationOutcome s = slow_done.get();
  EXPECT_EQ(s.result.output_ids, alone(prompt_of(1, 20), 200));
  EXPECT_EQ(model.stats().snapshot().at("batch").preemptions, 1u);
}

// An interactive request that arrives while a batch prompt's step runs stops that step (it does
// not wait for it), and both requests still get exactly the tokens they get alone.
TEST(GenerationScheduler, AnInteractiveArrivalInterruptsABatchStepWithoutChangingAToken) {
  ServeConfig config = two_classes();
  config.step_tokens = 256;
  config.classes["batch"].prefill_chunk = 0;  // the whole prompt in one long step
  config.classes["batch"].prefill_chunk_contended = 0;
  GenerativeModel model("llama", engine(), kModel, config, {}, 2);
  Collected slow, urgent;
  model.submit(request(prompt_of(5, 250), 4, "batch"), slow.events());
  while (model.load().running == 0) std::this_thread::yield();  // admitted: its prompt step is next
  model.submit(request(prompt_of(6, 8), 3, "interactive"), urgent.events());
  GenerationOutcome u = urgent.done.get_future().get(), b = slow.done.get_future().get();
  EXPECT_EQ(u.result.output_ids, alone(prompt_of(6, 8), 3));
  EXPECT_EQ(b.result.output_ids, alone(prompt_of(5, 250), 4));
  EXPECT_EQ(slow.streamed, b.result.output_ids);
  const auto stats = model.stats().snapshot();
  EXPECT_GE(stats.at("batch").interruptions, 1u) << "the interactive request waited for the batch step";
  EXPECT_EQ(stats.at("interactive").interruptions, 0u);
  EXPECT_EQ(model.load().cache.blocks_used, 0);
  EXPECT_NE(generation_prometheus_text({&model}).find("fusor:num_step_interruptions_total{model_name=\"llama\",class=\"batch\"}"),
            std::string::npos);
}

TEST(GenerationScheduler, CancelEndsARunningRequestAndFreesItsBlocks) {
  GenerativeModel model("llama", engine(), kModel, two_classes(), {}, 2);
  Collected c;
  const uint64_t id = model.submit(request(prompt_of(3, 40), 400), c.events());
  c.first.get_future().wait();
  model.cancel(id);
  GenerationOutcome o = c.done.get_future().get();
  EXPECT_TRUE(o.status.ok());
  EXPECT_EQ(o.finish_reason, "abort");
  EXPECT_LT(o.result.output_ids.size(), 400u);
  EXPECT_EQ(model.load().cache.blocks_used, 0);
  EXPECT_EQ(model.stats().snapshot().at("interactive").finished.at("abort"), 1u);
}

TEST(GenerationScheduler, RefusalsAnswerAtOnceWithTheirCode) {
  GenerativeModel model("llama", engine(), kModel, two_classes(), {}, 2);
  auto outcome = [&](GenerationRequest r) {
    Collected c;
    EXPECT_EQ(model.submit(std::move(r), c.events()), 0u);
    auto f = c.done.get_future();
    EXPECT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "a refusal must answer in submit()";
    return f.get();
  };
  GenerationOutcome o = outcome(request(prompt_of(0, 512), 4));
  EXPECT_EQ(o.status.code, Code::BadRequest);
  EXPECT_NE(o.status.message.find("context length is 512"), std::string::npos) << o.status.message;
  EXPECT_EQ(outcome(request({}, 4)).status.code, Code::BadRequest);
  EXPECT_EQ(outcome(request({1, 8192}, 4)).status.code, Code::BadRequest);
  EXPECT_EQ(outcome(request({1, -1}, 4)).status.code, Code::BadRequest);
  EXPECT_EQ(outcome(request({1, 2}, 4, "nightly")).status.code, Code::BadRequest);
  GenerationRequest bad = request({1, 2}, 4);
  bad.options.sampling.top_p = 2;
  EXPECT_EQ(outcome(bad).status.code, Code::BadRequest);
  model.drain();
  EXPECT_EQ(outcome(request({1, 2}, 4)).status.code, Code::Unavailable);
  const auto stats = model.stats().snapshot();
  // Every 400 above, the unknown class ("nightly") counted under the default class.
  EXPECT_EQ(stats.at("interactive").failures.at("bad_request"), 6u);
  EXPECT_EQ(stats.at("interactive").waiting, 0);
}

// timeout_ms 0 means no timeout (docs/config.md), as for the encoder batcher: not "any wait is too long".
TEST(GenerationScheduler, ATimeoutOfZeroNeverTimesARequestOut) {
  ServeConfig config = two_classes();
  config.classes["interactive"].timeout_ms = 0;
  GenerativeModel model("llama", engine(), kModel, config, {}, 2);
  Collected c;
  model.submit(request(prompt_of(4, 8), 3, "interactive"), c.events());
  GenerationOutcome o = c.done.get_future().get();
  ASSERT_TRUE(o.status.ok()) << o.status.message;
  EXPECT_EQ(o.result.output_ids, alone(prompt_of(4, 8), 3));
}

TEST(GenerationScheduler, DrainFinishesEveryAcceptedRequest) {
  GenerativeModel model("llama", engine(), kModel, two_classes(), {}, 2);
  std::vector<std::unique_ptr<Collected>> got;
  for (size_t i = 0; i < 5; ++i) {
    got.push_back(std::make_unique<Collected>());
    model.submit(request(prompt_of(i, 8), 12, "batch"), got.back()->events());
  }
  model.drain();
  for (auto& c : got) {
    auto f = c->done.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    GenerationOutcome o = f.get();
    EXPECT_TRUE(o.status.ok());
    EXPECT_EQ(o.result.output_ids.size(), 12u);
  }
}

TEST(GenerationScheduler, MetricsNameVllmsFamiliesUnderTheFusorPrefix) {
  GenerativeModel model("llama", engine(), kModel, two_classes(), {}, 2);
  Collected c;
  model.submit(request(prompt_of(4, 6), 3), c.events());
  c.done.get_future().get();
  const std::string text = generation_prometheus_text({&model});
  for (const char* family : {"fusor:time_to_first_token_seconds_count{model_name=\"llama\",class=\"interactive\"} 1",
                             "fusor:inter_token_latency_seconds_count{model_name=\"llama\",class=\"interactive\"} 2",
                             "fusor:generation_tokens_total{model_name=\"llama\",class=\"interactive\"} 3",
                             "fusor:prompt_tokens_total{model_name=\"llama\",class=\"interactive\"} 6",
                             "fusor:request_success_total{model_name=\"llama\",class=\"interactive\",finished_reason=\"length\"} 1",
                             "fusor:num_requests_running{model_name=\"llama\",class=\"batch\"} 0",
                             "fusor:kv_cache_usage_perc{model_name=\"llama\"} 0"})
    EXPECT_NE(text.find(family), std::string::npos) << family << "\n" << text;
}

}  // namespace
}  // namespace fusor::serve
