#include "tune/load_bench.h"


#include <algorithm>
#include <cmath>

#include "kernels/cpu/thread_pool.h"
#include "serve/batch_assembly.h"
#include "tune/capacity_search.h"
#include "tune/closed_loop.h"
#include "tune/open_loop.h"

namespace fusor::tune {

namespace {
const char* const kClass = "tune";
}

LoadBench::LoadBench(const Engine& engine, const ServeConfig& serve, std::shared_ptr<const serve::OptionsMatrix> matrix,
                     Layout layout, const std::map<std::string, Dims>& request, const Setting& setting,
                     bool adaptive_window, const Slo& slo, const std::vector<int64_t>& warm_rows, const LoadShape& shape)
    : sig_(serve::Signature::of(engine.inputs(), engine.outputs())), layout_(layout), setting_(setting), slo_(slo),
      token_bucket_(serve.token_bucket) {
  if (shape.lengths) {
    min_length_ = shape.lengths->min;
    for (int64_t l = shape.lengths->min; l <= shape.lengths->max; ++l)
      requests_.push_back(engine.sample_inputs(with_length(sig_, request, l)));
  } else {
    min_length_ = request_length(sig_, request);
    requests_.push_back(engine.sample_inputs(request));
  }
  const bool token_mode = shape.packed && setting.max_batch_tokens > 0;
  auto packed_options = std::make_shared<serve::OptionsMatrix>();  // every packed plan: shape.packed
  if (token_mode) packed_options->fallback = *shape.packed;
  for (int64_t c = 0; c < layout.contexts; ++c) {
    caches_.push_back(std::make_unique<serve::SessionCache>(engine, matrix, sig_.batched));
    if (token_mode) packed_caches_.push_back(std::make_unique<serve::PackedCache>(engine, packed_options, token_bucket_));
  }
  warmed_.assign(static_cast<size_t>(layout.contexts), 0);
  ServeConfig config = serve;
  TrafficClass cls;
  cls.batch_window_ms = setting.batch_window_ms;
  cls.max_batch = setting.max_batch;
  cls.adaptive_window = adaptive_window;
  if (token_mode) cls.max_batch_tokens = setting.max_batch_tokens;
  // A request this late already failed the SLO; answering it 503 bounds the drain after an
  // overloaded point.
  cls.timeout_ms = std::max(1000.0, 4 * slo.p99_ms);
  cls.max_queue_size = 1 << 20;
  config.classes = {{kClass, cls}};
  config.default_class = kClass;
  config.execution_contexts = layout.contexts;
  stats_ = std::make_unique<serve::ModelStats>(std::vector<std::string>{kClass});
  const int threads = layout.threads_per_context;
  serve::RunPacked run_packed;
  if (token_mode)
    run_packed = [this](size_t ctx, const std::vector<const serve::Tensors*>& requests) {
      if (!warmed_[ctx]) warm_packed(ctx);
      return packed_caches_[ctx]->run(requests);
    };
  cpu::release_openmp_team();  // this thread built the sessions; the contexts' threads run them
  batcher_ = std::make_unique<serve::Batcher>(
      config, sig_, [this](size_t ctx, const serve::Tensors& batch) { return caches_[ctx]->run(batch); }, *stats_,
      [threads](size_t) { cpu::become_compute_thread(threads); }, std::move(run_packed));
  // r + 1 at once: the first may leave alone (window 0), the other r then fill bucket r. Once per
  // context, so each builds its own. Padded with mixed lengths: once per length bucket too, each
  // burst of one length (the longest of its bucket), since every bucket has its own plans.
  std::vector<size_t> lengths = {kAnyLength};
  if (!token_mode && requests_.size() > 1) {
    lengths.clear();
    for (size_t i = 0; i < requests_.size(); ++i) {
      const int64_t l = min_length_ + static_cast<int64_t>(i);
      if (i + 1 == requests_.size() || serve::padded_seq(l + 1, serve.seq_bucket) != serve::padded_seq(l, serve.seq_bucket))
        lengths.push_back(i);
    }
  }
  for (size_t length : lengths)
    for (int64_t rows : warm_rows)
      if (rows <= setting.max_batch)
        for (int64_t c = 0; c < layout.contexts; ++c) burst(rows + 1, length);
}

LoadBench::~LoadBench() { batcher_->drain(); }

void LoadBench::submit(std::function<void(bool)> done, size_t length) {
  const size_t i = length != kAnyLength ? length
                   : requests_.size() == 1 ? 0
                                           : std::uniform_int_distribution<size_t>(0, requests_.size() - 1)(pick_);
  batcher_->submit(requests_[i], kClass, [done = std::move(done)](serve::Completion c) { done(c.status.ok()); });
}

void LoadBench::warm_packed(size_t ctx) {
  warmed_[ctx] = 1;
  const int64_t min_length = std::max<int64_t>(1, min_length_);
  const int64_t max_length = min_length + static_cast<int64_t>(requests_.size()) - 1;
  const int64_t reach = std::min(setting_.max_batch_tokens, setting_.max_batch * max_length);
  // Every plan capacity a batch within reach can need, the one holding `reach` included (it used
  // to stop below it, so a budget between two capacities built its plan while a point was timed):
  // fill each with the longest requests first.
  for (int64_t capacity : serve::packed_capacities_up_to(std::max(reach, max_length), token_bucket_)) {
    std::vector<const serve::Tensors*> batch;
    int64_t tokens = 0;
    for (int64_t left = capacity; left >= min_length;) {
      const int64_t length = std::min(left, max_length);
      batch.push_back(&requests_[static_cast<size_t>(length - min_length)]);
      tokens += length;
      left -= length;
    }
    if (!batch.empty() && serve::packed_capacity(tokens, token_bucket_) == capacity) packed_caches_[ctx]->run(batch);
  }
}

void LoadBench::burst(int64_t requests, size_t length) {
  std::atomic<bool> never{false};
  run_open_loop(std::vector<double>(static_cast<size_t>(requests), 0.0),
                [&](std::function<void(bool)> done) { submit(std::move(done), length); },
                never, requests + 1);
}

double LoadBench::saturated_qps(double duration_s, const std::atomic<bool>& stop) {
  // Two full batches per context: one running, one formed and waiting, so no context ever idles.
  const int64_t in_flight = 2 * setting_.max_batch * layout_.contexts;
  return run_closed_loop([&](std::function<void(bool)> done) { submit(std::move(done)); }, in_flight, duration_s, stop)
      .answered_qps();
}

CurvePoint LoadBench::measure(double rate_qps, double duration_s, const ArrivalSource& arrivals, uint64_t seed,
                              const std::atomic<bool>& stop) {
  pick_.seed(seed);  // the same mix of lengths for a setting's point at any rate
  auto before = stats_->snapshot();
  // Unanswered requests beyond what the SLO allows to be in flight: the queue only grows.
  const int64_t max_outstanding =
      static_cast<int64_t>(rate_qps * std::max(slo_.p99_ms, 1.0) / 1e3 * 4) + 4 * setting_.max_batch * layout_.contexts + 16;
  LoadResult r = run_open_loop(
      arrivals(rate_qps, duration_s, seed),
      [&](std::function<void(bool)> done) { submit(std::move(done)); },
      stop, max_outstanding);
  auto after = stats_->snapshot();

  CurvePoint p;
  p.offered_qps = static_cast<double>(r.sent) / duration_s;
  if (r.overloaded) p.offered_qps = rate_qps;  // sending stopped early; the rate asked for stands
  p.p50_ms = percentile(r.latencies_ms, 50);
  // Answers over the time they took to come back: the run's span to the last answer, less the
  // typical latency (the last request's own time in the system). A server that keeps up answers
  // at the offered rate; one that falls behind spends longer draining its backlog.
  double span_s = std::max(duration_s, r.total_s - p.p50_ms / 1e3);
  p.achieved_qps = r.total_s > 0 ? static_cast<double>(r.latencies_ms.size()) / span_s : 0;
  p.p99_ms = percentile(r.latencies_ms, 99);
  p.errors = r.errors + (r.overloaded ? 1 : 0);
  // Per batch, not per request (the snapshot's compute_ns counts each batch once per request).
  auto batch_totals = [](const serve::ModelStats::Snapshot& s) {
    std::pair<uint64_t, uint64_t> t{0, 0};  // runs, ns
    for (const auto& [rows, b] : s.batches) t.first += b.count, t.second += b.compute_ns;
    return t;
  };
  auto [runs0, ns0] = batch_totals(before);
  auto [runs1, ns1] = batch_totals(after);
  double busy_s = static_cast<double>(ns1 - ns0) / 1e9;
  p.utilisation = r.total_s > 0 ? busy_s / (r.total_s * static_cast<double>(layout_.contexts)) : 0;
  // Tokens, from the batcher's own counts (serve::ClassStats).
  const serve::ClassStats& c0 = before.classes.at(kClass);
  const serve::ClassStats& c1 = after.classes.at(kClass);
  const double useful = static_cast<double>(c1.useful_tokens - c0.useful_tokens);
  const double computed = static_cast<double>(c1.computed_tokens - c0.computed_tokens);
  const double bucket_plan = static_cast<double>(c1.bucket_plan_tokens - c0.bucket_plan_tokens);
  p.useful_tokens_per_s = useful / span_s;
  p.padding = computed > 0 ? std::max(0.0, 1 - useful / computed) : 0;
  p.bucket_padding = bucket_plan > 0 ? std::max(0.0, 1 - useful / bucket_plan) : 0;
  uint64_t execs = runs1 - runs0;
  p.mean_batch = execs ? static_cast<double>(after.inference_count - before.inference_count) / static_cast<double>(execs) : 0;
  return p;
}

}  // namespace fusor::tune
