#include "tune/load_bench.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "serve/batch_assembly.h"
#include "serve/batcher.h"
#include "tune/open_loop.h"

namespace fusor::tune {

constexpr double kMinRequestsPerPoint = 300;

LoadBench::LoadBench(const Engine& engine, const ServeConfig& serve, std::shared_ptr<const serve::OptionsMatrix> matrix,
                     Layout layout, const std::map<std::string, Dims>& request, const std::vector<int64_t>& warm_rows)
    : engine_(engine), serve_(serve), sig_(serve::Signature::of(engine.inputs(), engine.outputs())), layout_(layout) {
  request_ = engine.sample_inputs(request);
  serve::RequestShape shape = sig_.check(request_, serve_.seq_bucket);
  for (int64_t c = 0; c < layout.contexts; ++c)
    caches_.push_back(std::make_unique<serve::SessionCache>(engine_, matrix, sig_.batched));
  // Build every bucket's sessions now, on batches assembled exactly as the batcher will.
  for (int64_t rows : warm_rows) {
    std::vector<serve::Part> parts(static_cast<size_t>(rows), serve::Part{&request_, shape});
    serve::Tensors batch = serve::assemble(sig_, parts, rows, serve::padded_seq(shape.seq, serve_.seq_bucket), serve_.pad_values);
    for (auto& cache : caches_) cache->run(batch);
  }
}

LoadBench::~LoadBench() = default;

CurvePoint LoadBench::measure(const Setting& setting, const Slo& slo, double rate_qps, double duration_s,
                              const ArrivalSource& arrivals, uint64_t seed, const std::atomic<bool>& stop) {
  const std::string name = "tune";
  ServeConfig config = serve_;
  TrafficClass cls;
  cls.batch_window_ms = setting.batch_window_ms;
  cls.max_batch = setting.max_batch;
  // A request this late already failed the SLO; answering it 503 bounds the drain after an
  // overloaded point.
  cls.timeout_ms = std::max(1000.0, 4 * slo.p99_ms);
  cls.max_queue_size = 1 << 20;
  config.classes = {{name, cls}};
  config.default_class = name;
  config.execution_contexts = layout_.contexts;
  serve::ModelStats stats({name});
  const int threads = layout_.threads_per_context;
  serve::Batcher batcher(
      config, sig_, [this](size_t ctx, const serve::Tensors& batch) { return caches_[ctx]->run(batch); }, stats,
      [threads](size_t) { omp_set_num_threads(threads); });

  auto before = stats.snapshot();
  // Unanswered requests beyond what the SLO allows to be in flight: the queue only grows.
  const int64_t max_outstanding =
      static_cast<int64_t>(rate_qps * std::max(slo.p99_ms, 1.0) / 1e3 * 4) + 4 * setting.max_batch * layout_.contexts + 16;
  LoadResult r = run_open_loop(
      arrivals(rate_qps, duration_s, seed),
      [&](std::function<void(bool)> done) {
        batcher.submit(request_, name, [done = std::move(done)](serve::Completion c) { done(c.status.ok()); });
      },
      stop, max_outstanding);
  batcher.drain();
  auto after = stats.snapshot();

  CurvePoint p;
  p.offered_qps = static_cast<double>(r.sent) / duration_s;
  if (r.overloaded) p.offered_qps = rate_qps;  // sending stopped early; the rate asked for stands
  p.achieved_qps = r.total_s > 0 ? static_cast<double>(r.latencies_ms.size()) / std::max(r.total_s, duration_s) : 0;
  p.p50_ms = percentile(r.latencies_ms, 50);
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
  uint64_t execs = runs1 - runs0;
  p.mean_batch = execs ? static_cast<double>(after.inference_count - before.inference_count) / static_cast<double>(execs) : 0;
  return p;
}

Candidate search_capacity(LoadBench& bench, const Setting& setting, const Slo& slo, double predicted_qps,
                          double duration_s, const ArrivalSource& arrivals, const std::atomic<bool>& stop,
                          const std::function<void(const CurvePoint&)>& on_point) {
  Candidate c;
  c.setting = setting;
  c.predicted_qps = predicted_qps;
  double best_pass = 0, lowest_fail = INFINITY;
  double rate = std::max(0.5, 0.85 * predicted_qps);
  for (int i = 0; i < kMaxSearchPoints && !stop.load(); ++i) {
    // A p99 needs a few hundred requests: low rates run longer (up to 4x the duration).
    double run_s = std::clamp(kMinRequestsPerPoint / rate, duration_s, 4 * duration_s);
    CurvePoint p = bench.measure(setting, slo, rate, run_s, arrivals, 1000 + static_cast<uint64_t>(i), stop);
    if (stop.load()) break;  // a cut-short point is not a measurement
    c.curve.push_back(p);
    if (on_point) on_point(p);
    if (meets(p, slo)) {
      best_pass = std::max(best_pass, rate);
      c.capacity_qps = std::max(c.capacity_qps, p.offered_qps);
    } else {
      lowest_fail = std::min(lowest_fail, rate);
    }
    if (best_pass > 0 && std::isfinite(lowest_fail)) {
      if (lowest_fail / best_pass < 1.08) break;  // within the noise of a run
      rate = (best_pass + lowest_fail) / 2;
    } else {
      // Far below the SLO: climb fast (the prediction can be well off on a busy machine).
      rate = best_pass > 0 ? rate * (p.p99_ms < 0.5 * slo.p99_ms ? 1.6 : 1.25) : rate * 0.6;
    }
  }
  std::sort(c.curve.begin(), c.curve.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.offered_qps < b.offered_qps; });
  return c;
}

}  // namespace fusor::tune
