// The dynamic batcher with a stand-in model (no engine): grouping by sequence length, padding
// and cutting back, class priority, queue limits, timeouts, drain and the adaptive window. These
// tests also run under ThreadSanitizer (make test-tsan). They assert what the batcher does (which
// requests share a batch, in which order batches run, what each request gets back), never how
// fast: where a test needs requests to wait for one another it gives the batch class an
// hour-long fixed window and lets drain() release them. serve_batch_window_test and
// serve_arrival_rate_test test the adaptive window's rule without a clock.
#include "serve/batcher.h"
#include "serve/batch_assembly.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <future>
#include <thread>

namespace fusor::serve {
namespace {

using namespace std::chrono_literals;

// input_ids, attention_mask int64 [batch, sequence] -> out float [batch, sequence]: ids * mask.
Signature text_signature() {
  TensorInfo ids{"input_ids", DType::Int64, {-1, -1}, {"batch", "sequence"}, true};
  TensorInfo mask{"attention_mask", DType::Int64, {-1, -1}, {"batch", "sequence"}, true};
  TensorInfo out{"out", DType::Float32, {-1, -1}, {"batch", "sequence"}, true};
  return Signature::of({ids, mask}, {out});
}

Tensors request(std::vector<int64_t> ids) {
  Tensor t(DType::Int64, {1, static_cast<int64_t>(ids.size())}), m(DType::Int64, t.dims());
  for (size_t i = 0; i < ids.size(); ++i) t.data<int64_t>()[i] = ids[i], m.data<int64_t>()[i] = 1;
  return {{"input_ids", t}, {"attention_mask", m}};
}

// The stand-in model; records every batch's dims.
struct FakeModel {
  std::mutex mu;
  std::vector<Dims> batches;
  std::set<int64_t> ids_seen;  // every id of every batch
  std::chrono::milliseconds delay{0};
  std::shared_future<void> hold;  // when set, every batch runs until it is released
  int64_t max_seq = INT64_MAX;    // longer batches fail, as past a model's maximum positions
  Tensors operator()(size_t, const Tensors& in) {
    const Tensor& ids = in.at("input_ids");
    const Tensor& mask = in.at("attention_mask");
    {
      std::lock_guard lock(mu);
      batches.push_back(ids.dims());
      for (int64_t i = 0; i < ids.numel(); ++i) ids_seen.insert(ids.data<int64_t>()[i]);
    }
    std::this_thread::sleep_for(delay);
    if (hold.valid()) hold.wait();
    if (ids.dims()[1] > max_seq) throw Error("position out of range", ErrorKind::InvalidArgument);
    Tensor out(DType::Float32, ids.dims());
    for (int64_t i = 0; i < ids.numel(); ++i) {
      if (ids.data<int64_t>()[i] < 0) throw Error("negative id", ErrorKind::InvalidArgument);
      out.data<float>()[i] = static_cast<float>(ids.data<int64_t>()[i] * mask.data<int64_t>()[i]);
    }
    return {{"out", out}};
  }
};

ServeConfig two_classes() {
  ServeConfig c;
  c.default_class = "interactive";
  c.seq_bucket = 8;
  TrafficClass interactive, batch;
  interactive.batch_window_ms = 0;
  interactive.max_batch = 4;
  batch.batch_window_ms = 100;
  batch.preferred_batch_sizes = {4, 8};
  batch.priority = 1;
  c.classes = {{"interactive", interactive}, {"batch", batch}};
  return c;
}

// The batch class waits an hour for a full batch (the fixed window: the adaptive one would let an
// idle context take a lone request) and never times out: its requests leave the queue only when
// drain() releases them, so which requests share a batch does not depend on timing.
ServeConfig batch_class_waits() {
  ServeConfig c = two_classes();
  c.classes["batch"].batch_window_ms = 3600e3;
  c.classes["batch"].timeout_ms = 0;
  c.classes["batch"].adaptive_window = false;
  return c;
}

struct Harness {
  FakeModel model;
  ModelStats stats{{"interactive", "batch"}};
  std::unique_ptr<Batcher> batcher;
  explicit Harness(const ServeConfig& c, std::chrono::milliseconds delay = 0ms) {
    model.delay = delay;
    batcher = std::make_unique<Batcher>(c, text_signature(), std::ref(model), stats);
  }
  std::future<Completion> submit(std::vector<int64_t> ids, const std::string& cls = "", ClientGone gone = {}) {
    auto p = std::make_shared<std::promise<Completion>>();
    auto f = p->get_future();
    batcher->submit(request(std::move(ids)), cls, [p](Completion c) { p->set_value(std::move(c)); }, std::move(gone));
    return f;
  }
};

std::vector<float> values(const Completion& c) {
  const Tensor& t = c.outputs.at("out");
  return {t.data<float>(), t.data<float>() + t.numel()};
}

TEST(ServeBatcher, GroupsBySequenceBucketPadsAndCutsBack) {
  Harness h(batch_class_waits());
  auto a = h.submit({1, 2, 3}, "batch");
  auto b = h.submit({4, 5, 6, 7, 8}, "batch");
  auto c = h.submit({9, 9, 9, 9, 9, 9, 9, 9, 9, 9}, "batch");  // length 10: the next bucket
  h.batcher->drain();
  Completion ra = a.get();
  EXPECT_EQ(values(ra), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ra.outputs.at("out").dims(), (Dims{1, 3}));
  EXPECT_EQ(values(b.get()), (std::vector<float>{4, 5, 6, 7, 8}));
  EXPECT_EQ(values(c.get()).size(), 10u);
  std::lock_guard lock(h.model.mu);
  // a and b share a batch padded to the preferred size 4 and the bucket 8; c runs apart at 16.
  EXPECT_EQ(h.model.batches, (std::vector<Dims>{{4, 8}, {4, 16}}));
}

// Padding to a common length is hidden only by a mask: without a mask input (an audio model's
// samples, token ids alone) requests batch only with requests of their own length. Before, an
// audio model's 1000 samples ran padded to 1008, and its outputs moved by 1e-2 against ONNX Runtime.
TEST(ServeSignature, PadsLengthsOnlyBehindAMask) {
  const Signature text = text_signature();
  TensorInfo samples{"input_values", DType::Float32, {-1, -1}, {"batch", "samples"}, true};
  TensorInfo frames{"out", DType::Float32, {-1, -1, 128}, {"batch", "frames", ""}, true};
  const Signature audio = Signature::of({samples}, {frames});
  EXPECT_TRUE(text.pads_seq);
  EXPECT_FALSE(audio.pads_seq);
  EXPECT_EQ(text.seq_bucket(16), 16);
  EXPECT_EQ(audio.seq_bucket(16), 1);
  auto row = [](int64_t n) { return Tensors{{"input_values", Tensor(DType::Float32, {1, n})}}; };
  EXPECT_NE(audio.check(row(1000), audio.seq_bucket(16)).group, audio.check(row(1008), audio.seq_bucket(16)).group);
  EXPECT_EQ(audio.check(row(1000), audio.seq_bucket(16)).group, audio.check(row(1000), audio.seq_bucket(16)).group);
  EXPECT_EQ(text.check(request({1, 2, 3}), text.seq_bucket(16)).group,
            text.check(request({1, 2, 3, 4, 5}), text.seq_bucket(16)).group);
  TensorInfo ids_alone{"input_ids", DType::Int64, {-1, -1}, {"batch", "sequence"}, true};
  EXPECT_FALSE(Signature::of({ids_alone}, {frames}).pads_seq);
}

// Token mode (packed serving): requests of any length share a batch, which closes on the class's
// token budget (or row limit); nothing is padded, each request gets its own outputs; a request
// larger than the budget runs alone, and a batch that fails is retried request by request.
struct PackedHarness {
  std::mutex mu;
  std::vector<std::vector<int64_t>> batches;  // each batch's request lengths
  ModelStats stats{{"interactive", "batch"}};
  std::unique_ptr<Batcher> batcher;
  explicit PackedHarness(const ServeConfig& c) {
    RunPacked packed = [this](size_t, const std::vector<const Tensors*>& requests) {
      std::vector<int64_t> lengths;
      for (const Tensors* r : requests) lengths.push_back(r->at("input_ids").dims()[1]);
      {
        std::lock_guard lock(mu);
        batches.push_back(lengths);
      }
      std::vector<Tensors> outs;
      for (const Tensors* r : requests) {
        const Tensor& ids = r->at("input_ids");
        Tensor out(DType::Float32, ids.dims());
        for (int64_t i = 0; i < ids.numel(); ++i) {
          if (ids.data<int64_t>()[i] < 0) throw Error("negative id", ErrorKind::InvalidArgument);
          out.data<float>()[i] = static_cast<float>(ids.data<int64_t>()[i]);
        }
        outs.push_back({{"out", out}});
      }
      return outs;
    };
    batcher = std::make_unique<Batcher>(c, text_signature(), nullptr, stats, nullptr, packed);
  }
  std::future<Completion> submit(std::vector<int64_t> ids) {
    auto p = std::make_shared<std::promise<Completion>>();
    auto f = p->get_future();
    batcher->submit(request(std::move(ids)), "batch", [p](Completion c) { p->set_value(std::move(c)); });
    return f;
  }
};

TEST(ServeBatcher, TokenModeFillsBatchesByTokensWithoutPadding) {
  ServeConfig c = batch_class_waits();
  c.classes["batch"].max_batch = 16;
  c.classes["batch"].max_batch_tokens = 10;
  PackedHarness h(c);
  auto a = h.submit({1, 2, 3});
  auto d = h.submit({4, 5, 6, 7, 8, 9, 9});        // 3 + 7 = 10 tokens: a's batch is full
  auto b = h.submit(std::vector<int64_t>(13, 5));  // longer than the budget: runs alone
  auto e = h.submit({-1});                         // fails alone; its batch-mate still answers
  auto f = h.submit({6, 6});
  h.batcher->drain();
  EXPECT_EQ(values(a.get()), (std::vector<float>{1, 2, 3}));
  Completion rb = b.get();
  EXPECT_EQ(rb.outputs.at("out").dims(), (Dims{1, 13}));
  EXPECT_EQ(values(d.get()), (std::vector<float>{4, 5, 6, 7, 8, 9, 9}));
  EXPECT_FALSE(e.get().status.ok());
  EXPECT_EQ(values(f.get()), (std::vector<float>{6, 6}));
  std::lock_guard lock(h.mu);
  // a and d share one batch (10 tokens), b runs alone, e and f fail together and are retried alone.
  EXPECT_EQ(h.batches, (std::vector<std::vector<int64_t>>{{3, 7}, {13}, {1, 2}, {1}, {2}}));
  auto snap = h.stats.snapshot().classes.at("batch");
  EXPECT_EQ(snap.useful_tokens, 3u + 13 + 7 + 2);
  EXPECT_EQ(snap.bucket_plan_tokens, 8u + 16 + 8 + 8);  // each padded to its seq_bucket (8)
}

TEST(ServeBatcher, PaddingUsesTheConfiguredPadValues) {
  ServeConfig c = two_classes();
  c.pad_values = {{"input_ids", 7}, {"attention_mask", 0}};
  Tensors seen;
  ModelStats stats({"interactive", "batch"});
  Batcher b(c, text_signature(), [&](size_t, const Tensors& in) {
    seen = in;
    Tensor out(DType::Float32, in.at("input_ids").dims());
    return Tensors{{"out", out}};
  }, stats);
  auto p = std::make_shared<std::promise<Completion>>();
  b.submit(request({1, 2}), "interactive", [p](Completion x) { p->set_value(std::move(x)); });
  ASSERT_TRUE(p->get_future().get().status.ok());
  b.drain();
  const Tensor& ids = seen.at("input_ids");
  ASSERT_EQ(ids.dims(), (Dims{1, 8}));
  EXPECT_EQ(std::vector<int64_t>(ids.data<int64_t>(), ids.data<int64_t>() + 8), (std::vector<int64_t>{1, 2, 7, 7, 7, 7, 7, 7}));
  EXPECT_EQ(seen.at("attention_mask").data<int64_t>()[2], 0);
}

// One execution context: the interactive request runs while the batch request's batch is still
// forming (it would wait an hour), so the forming batch holds no worker.
TEST(ServeBatcher, InteractiveDoesNotWaitBehindAFormingBatch) {
  Harness h(batch_class_waits());
  auto slow = h.submit({1}, "batch");
  auto fast = h.submit({2}, "interactive");
  // A guard against hanging for the hour, not a latency bound.
  ASSERT_EQ(fast.wait_for(10min), std::future_status::ready) << "the interactive request waited for the batch";
  EXPECT_EQ(values(fast.get()), std::vector<float>{2});
  EXPECT_EQ(slow.wait_for(0ms), std::future_status::timeout) << "the batch ran before its window or a full batch";
  h.batcher->drain();
  EXPECT_EQ(values(slow.get()), std::vector<float>{1});
  std::lock_guard lock(h.model.mu);
  // The interactive batch (1 row, bucket 8) ran first; the batch class's (padded to 4 rows) after.
  EXPECT_EQ(h.model.batches, (std::vector<Dims>{{1, 8}, {4, 8}}));
}

TEST(ServeBatcher, FullQueueAndTimeoutAnswerUnavailable) {
  ServeConfig c = batch_class_waits();  // the batch would wait an hour: only the timeout ends it
  c.classes["batch"].max_queue_size = 1;
  c.classes["batch"].timeout_ms = 50;
  Harness h(c);
  auto first = h.submit({1}, "batch");
  auto second = h.submit({2}, "batch");
  Completion full = second.get();
  EXPECT_EQ(full.status.code, Code::Unavailable);
  EXPECT_NE(full.status.message.find("is full"), std::string::npos) << full.status.message;
  Completion timed_out = first.get();
  EXPECT_EQ(timed_out.status.code, Code::Unavailable);
  EXPECT_NE(timed_out.status.message.find("timed out"), std::string::npos) << timed_out.status.message;
  std::lock_guard lock(h.model.mu);
  EXPECT_TRUE(h.model.batches.empty()) << "neither request reached the model";
}

// A request that times out while every context is busy is answered when it times out, not when
// a context frees up: with resnet18's half-second batches, requests of a class with timeout_ms:
// 100 got their 503 after 470 ms (p50).
TEST(ServeBatcher, ATimeoutIsAnsweredWhileEveryContextIsBusy) {
  ServeConfig c = batch_class_waits();
  c.execution_contexts = 1;
  c.classes["batch"].timeout_ms = 50;
  Harness h(c);
  std::promise<void> release;
  h.model.hold = release.get_future().share();
  auto running = h.submit({1}, "interactive");  // takes the only context until released
  for (int i = 0; i < 10000; ++i) {
    std::lock_guard lock(h.model.mu);
    if (!h.model.batches.empty()) break;
    std::this_thread::sleep_for(1ms);
  }
  auto waiting = h.submit({2}, "batch");
  // A guard against waiting for ever, not a latency bound.
  const auto answered = waiting.wait_for(30s);
  const bool still_running = running.wait_for(0ms) == std::future_status::timeout;
  release.set_value();
  ASSERT_EQ(answered, std::future_status::ready) << "the timed-out request waited for the busy context";
  EXPECT_TRUE(still_running);
  const Completion timed_out = waiting.get();
  EXPECT_EQ(timed_out.status.code, Code::Unavailable);
  EXPECT_NE(timed_out.status.message.find("timed out"), std::string::npos) << timed_out.status.message;
  EXPECT_EQ(values(running.get()), std::vector<float>{1});
}

TEST(ServeBatcher, ARequestWhoseClientLeftWhileWaitingIsDroppedUnrun) {
  Harness h(batch_class_waits());
  auto left = std::make_shared<std::atomic<bool>>(false);
  auto gone = h.submit({1, 2}, "batch", [left] { return left->load(); });
  auto stays = h.submit({3, 4}, "batch", [] { return false; });
  *left = true;  // while both wait for the window
  h.batcher->drain();
  const Completion dropped = gone.get();
  EXPECT_EQ(dropped.status.code, Code::Cancelled);
  EXPECT_EQ(values(stays.get()), (std::vector<float>{3, 4}));
  std::lock_guard lock(h.model.mu);
  EXPECT_EQ(h.model.batches.size(), 1u);
  EXPECT_EQ(h.model.ids_seen.count(1) + h.model.ids_seen.count(2), 0u) << "the dropped request ran";
  EXPECT_EQ(h.model.ids_seen.count(3) + h.model.ids_seen.count(4), 2u);
  EXPECT_EQ(h.stats.snapshot().classes.at("batch").failures.at("cancelled"), 1u);
}

// A deep queue (max_queue_size raised) is not swept whole for every batch: each take used to ask
// every waiting request's client whether it had gone, ~n^2 / 2 questions for n queued requests
// (32 million here), and a model of microseconds then served a tenth of its capacity. A request a
// batch takes is still asked, so none runs for a client that has gone.
TEST(ServeBatcher, ADeepQueueIsNotSweptWholeForEveryBatch) {
  ServeConfig c = batch_class_waits();
  c.classes["batch"].max_queue_size = 100000;
  Harness h(c);
  constexpr int kQueued = 8000;
  auto asked = std::make_shared<std::atomic<int64_t>>(0);
  std::vector<std::future<Completion>> answers;
  for (int i = 0; i < kQueued; ++i)
    answers.push_back(h.submit({i + 1}, "batch", [asked] { return asked->fetch_add(1) < 0; }));
  h.batcher->drain();
  for (auto& a : answers) ASSERT_TRUE(a.get().status.ok());
  EXPECT_GE(asked->load(), kQueued) << "each request is asked at least when a batch takes it";
  EXPECT_LT(asked->load(), 40 * kQueued);
}

// A bucket past the model's maximum positions: seq_bucket 384 padded a valid 400-token request
// to 768 where MiniLM takes 512, and answered 400. A failed padded batch now runs each request at
// its own length, and once that works, batches stop padding that far.
TEST(ServeBatcher, PaddingPastWhatTheModelTakesFallsBackToTheRequestsLength) {
  ServeConfig c = two_classes();  // interactive: no window, seq_bucket 8
  c.classes["interactive"].max_batch = 1;
  Harness h(c);
  h.model.max_seq = 12;
  EXPECT_EQ(values(h.submit({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).get()).size(), 10u);  // padded to 16: failed, then 10
  EXPECT_EQ(values(h.submit({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}).get()).size(), 11u);  // 11 at once
  EXPECT_EQ(values(h.submit({1, 2, 3}).get()).size(), 3u);  // padded to 8 as before
  const Completion too_long = h.submit({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}).get();
  EXPECT_EQ(too_long.status.code, Code::BadRequest);
  EXPECT_NE(too_long.status.message.find("position out of range"), std::string::npos) << too_long.status.message;
  std::lock_guard lock(h.model.mu);
  EXPECT_EQ(h.model.batches, (std::vector<Dims>{{1, 16}, {1, 10}, {1, 11}, {1, 8}, {1, 13}}));
}

TEST(ServeBatcher, RejectsUnknownClassTooManyRowsAndBadShapes) {
  Harness h(two_classes());
  EXPECT_EQ(h.submit({1}, "bulk").get().status.code, Code::BadRequest);
  auto p = std::make_shared<std::promise<Completion>>();
  Tensors wide = request({1, 2});
  wide["attention_mask"] = Tensor(DType::Int64, {1, 3});
  h.batcher->submit(wide, "", [p](Completion c) { p->set_value(std::move(c)); });
  EXPECT_EQ(p->get_future().get().status.code, Code::BadRequest);
}

TEST(ServeBatcher, ARequestTheModelRejectsFailsAlone) {
  Harness h(batch_class_waits());
  auto good = h.submit({1, 2}, "batch");
  auto bad = h.submit({-1, 2}, "batch");
  h.batcher->drain();
  EXPECT_EQ(values(good.get()), (std::vector<float>{1, 2}));
  EXPECT_EQ(bad.get().status.code, Code::BadRequest);
  std::lock_guard lock(h.model.mu);
  // Together they fail; then each runs alone, at its own length (padding may have been the cause).
  EXPECT_EQ(h.model.batches, (std::vector<Dims>{{4, 8}, {4, 2}, {4, 2}}));
}

// The adaptive window (the default): with a context idle and no batch-mate in sight, a request
// does not wait for the window.
TEST(ServeBatcher, AtIdleARequestDoesNotWaitForTheWindow) {
  ServeConfig c = two_classes();
  c.classes["batch"].batch_window_ms = 10e3;
  Harness h(c);
  auto f = h.submit({5, 6}, "batch");
  // A guard against hanging for the 10 s window, not a latency bound.
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "the request waited for the window";
  EXPECT_EQ(values(f.get()), (std::vector<float>{5, 6}));
}

// The model holds the only context on its first batch (200 ms) while two requests arrive densely.
// Once the context is free, the batch keeps collecting (a batch-mate is expected soon, and holding
// for 20 ms costs less than a batch's run), rather than leaving as soon as a context is idle, so
// the request that comes later joins it.
TEST(ServeBatcher, AfterDenseArrivalsAnIdleContextKeepsCollecting) {
  ServeConfig c = two_classes();
  c.classes["batch"].batch_window_ms = 3600e3;
  c.classes["batch"].timeout_ms = 0;
  c.classes["batch"].preferred_batch_sizes.clear();  // batches pad to powers of two: 1 row stays 1
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  std::mutex mu;
  std::vector<Dims> batches;
  ModelStats stats({"interactive", "batch"});
  Batcher b(c, text_signature(), [&](size_t, const Tensors& in) {
    {
      std::lock_guard lock(mu);
      batches.push_back(in.at("input_ids").dims());
    }
    if (first.exchange(false)) {
      started.set_value();
      released.wait();
    }
    return Tensors{{"out", Tensor(DType::Float32, in.at("input_ids").dims())}};
  }, stats);
  std::vector<std::future<Completion>> all;
  auto submit = [&](std::vector<int64_t> ids) {
    auto p = std::make_shared<std::promise<Completion>>();
    all.push_back(p->get_future());
    b.submit(request(std::move(ids)), "batch", [p](Completion x) { p->set_value(std::move(x)); });
  };
  submit({1});
  started.get_future().wait();  // the lone first request runs: nothing was known to wait for
  submit({2});
  submit({3});
  std::this_thread::sleep_for(200ms);  // the batch's run time: the longest a batch then holds
  release.set_value();
  // Time for the freed context to look at the queue: with a wrong rule it would take the two
  // requests now. Not a latency bound: any interleaving gives the same batches when right.
  std::this_thread::sleep_for(20ms);
  submit({4});
  b.drain();
  for (auto& f : all) EXPECT_TRUE(f.get().status.ok());
  std::lock_guard lock(mu);
  // The three later requests shared one batch (3 rows padded to 4).
  EXPECT_EQ(batches, (std::vector<Dims>{{1, 8}, {4, 8}}));
}

TEST(ServeBatcher, DrainFinishesEveryAcceptedRequestAndRefusesNewOnes) {
  Harness h(two_classes(), 2ms);
  std::vector<std::future<Completion>> all;
  for (int i = 0; i < 20; ++i) all.push_back(h.submit({i, i}, i % 2 ? "batch" : "interactive"));
  h.batcher->drain();
  for (auto& f : all) EXPECT_TRUE(f.get().status.ok());
  EXPECT_EQ(h.submit({1}).get().status.code, Code::Unavailable);
}

TEST(ServeBatcher, ManyThreadsManyContexts) {
  ServeConfig c = two_classes();
  c.execution_contexts = 3;
  Harness h(c);
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 6; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        std::vector<int64_t> ids(static_cast<size_t>(1 + (i * 7 + t) % 20), t + 1);
        Completion r = h.submit(ids, (i + t) % 3 ? "interactive" : "batch").get();
        if (r.status.ok() && values(r) == std::vector<float>(ids.begin(), ids.end())) ++ok;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok, 240);
  auto s = h.stats.snapshot();
  EXPECT_EQ(s.success_count, 240u);
  EXPECT_EQ(s.classes["interactive"].pending + s.classes["batch"].pending, 0);
}

// The plans a token budget can need end with the one that holds it, also when the budget falls
// between two capacities (1000 tokens: ... 960, 1024), and each is a capacity the server builds.
TEST(PackedCapacities, LadderEndsWithThePlanThatHoldsTheBudget) {
  for (int64_t budget : {1, 16, 100, 960, 1000, 1024, 2048, 4097}) {
    const std::vector<int64_t> ladder = packed_capacities_up_to(budget, 16);
    ASSERT_FALSE(ladder.empty()) << budget;
    EXPECT_EQ(ladder.front(), 16) << budget;
    EXPECT_EQ(ladder.back(), packed_capacity(budget, 16)) << budget;
    EXPECT_GE(ladder.back(), budget) << budget;
    for (size_t i = 0; i < ladder.size(); ++i) {
      EXPECT_EQ(packed_capacity(ladder[i], 16), ladder[i]) << budget;
      if (i) EXPECT_EQ(ladder[i], packed_capacity(ladder[i - 1] + 1, 16)) << "no capacity skipped below " << budget;
    }
  }
  const std::vector<int64_t> at_1000 = packed_capacities_up_to(1000, 16);
  EXPECT_EQ(std::vector<int64_t>(at_1000.end() - 2, at_1000.end()), (std::vector<int64_t>{960, 1024}));
}

}  // namespace
}  // namespace fusor::serve
