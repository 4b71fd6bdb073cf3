#include "tune/generation_bench.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "fusor/error.h"
#include "tune/open_loop.h"

namespace fusor::tune {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

ServeConfig one_class(ServeConfig serve, const std::string& cls, const Setting& s, const Slo& slo) {
  auto given = serve.classes.find(cls);
  TrafficClass t = given != serve.classes.end() ? given->second : TrafficClass{};
  t.max_running = s.max_running;
  t.prefill_chunk = s.prefill_chunk;
  t.priority = 0;
  t.ttft_target_ms = slo.ttft_p99_ms;
  t.itl_target_ms = slo.itl_p99_ms;
  t.max_queue_size = std::max<int64_t>(t.max_queue_size, 4096);  // the load, not the queue, decides what fails
  serve.classes = {{cls, t}};
  serve.default_class = cls;
  serve.step_tokens = s.step_tokens;
  serve.max_sequences = s.max_running;
  return serve;
}

}  // namespace

// Token times of one run. Callbacks come from the scheduler's single thread, but the run's
// thread reads the totals, so they are under a mutex.
struct GenerationBench::Recorder {
  std::mutex mu;
  std::vector<double> ttft_ms, itl_ms;
  std::vector<Clock::time_point> token_times;  // every token of this run's requests, as generated

  // Tokens generated in [from, to).
  int64_t tokens_between(Clock::time_point from, Clock::time_point to) const {
    return std::count_if(token_times.begin(), token_times.end(), [&](Clock::time_point t) { return t >= from && t < to; });
  }
};

GenerationBench::GenerationBench(const Engine& engine, const std::string& model_file, const ServeConfig& serve,
                                 const SessionOptions& options, int threads, const std::string& cls,
                                 const Setting& setting, const Slo& slo, const GenerationLoad& load)
    : cls_(cls), setting_(setting), slo_(slo), load_(load), lengths_(load.prompt, 7), ids_(11),
      model_(std::make_unique<serve::GenerativeModel>("tune", engine, model_file, one_class(serve, cls, setting, slo),
                                                      options, threads, /*announce=*/false)) {
  const DecoderSpec& spec = model_->spec();
  // Any id of the vocabulary will do (EOS is ignored); without a declared size, ids every real
  // vocabulary holds.
  vocab_ = spec.vocab_size > 0 ? spec.vocab_size : 100;
}

GenerationBench::~GenerationBench() = default;

void GenerationBench::submit(Recorder& rec, std::function<void(bool)> done) {
  serve::GenerationRequest request;
  request.prompt.resize(static_cast<size_t>(lengths_.next()));
  for (TokenId& id : request.prompt) id = static_cast<TokenId>(std::uniform_int_distribution<int64_t>(0, vocab_ - 1)(ids_));
  request.options.max_new_tokens = load_.output_tokens;
  request.options.ignore_eos = true;
  request.cls = cls_;
  // The request's clock starts at its submission, which the open-loop generator makes at its
  // scheduled time (submit never blocks), so queueing shows in the first token's time.
  auto last = std::make_shared<Clock::time_point>(Clock::now());
  auto first = std::make_shared<bool>(true);
  model_->submit(std::move(request),
                 {.on_token =
                      [&rec, last, first](TokenId, std::string_view, bool) {
                        const auto now = Clock::now();
                        std::lock_guard lock(rec.mu);
                        (*first ? rec.ttft_ms : rec.itl_ms).push_back(ms_between(*last, now));
                        *first = false;
                        *last = now;
                        rec.token_times.push_back(now);
                      },
                  .on_done = [done = std::move(done)](const serve::GenerationOutcome& o) {
                    done(o.status.ok() && o.finish_reason != "abort");
                  }});
}

CurvePoint GenerationBench::saturate(double duration_s, const std::atomic<bool>& stop) {
  Recorder rec;
  std::mutex mu;
  std::condition_variable cv;
  int64_t in_flight = 0, errors = 0;
  std::vector<double> e2e_ms;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
  std::unique_lock lock(mu);
  // The scheduler's callbacks only count; this thread submits, since they may not call back in.
  for (;;) {
    const bool open = Clock::now() < end && !stop.load();
    while (open && in_flight < setting_.max_running) {
      ++in_flight;
      const auto sent = Clock::now();
      lock.unlock();
      submit(rec, [&, sent](bool ok) {
        std::lock_guard l(mu);
        --in_flight;
        if (ok) e2e_ms.push_back(ms_between(sent, Clock::now()));
        else ++errors;
        cv.notify_all();
      });
      lock.lock();
    }
    if (!open && in_flight == 0) break;
    if (open) cv.wait_until(lock, end, [&] { return in_flight < setting_.max_running; });
    else cv.wait(lock, [&] { return in_flight == 0; });
  }
  lock.unlock();
  CurvePoint p;
  std::lock_guard r(rec.mu);
  p.output_tokens_per_s = static_cast<double>(rec.tokens_between(start, end)) / duration_s;
  p.achieved_qps = p.output_tokens_per_s / static_cast<double>(load_.output_tokens);
  p.offered_qps = p.achieved_qps;  // a closed loop offers what it carries
  p.errors = errors;
  p.p50_ms = percentile(e2e_ms, 50), p.p99_ms = percentile(e2e_ms, 99);
  p.ttft_p50_ms = percentile(rec.ttft_ms, 50), p.ttft_p99_ms = percentile(rec.ttft_ms, 99);
  p.itl_p50_ms = percentile(rec.itl_ms, 50), p.itl_p99_ms = percentile(rec.itl_ms, 99);
  p.utilisation = 1;
  peak_tokens_per_s_ = p.output_tokens_per_s;
  return p;
}

CurvePoint GenerationBench::measure(double rate_qps, double duration_s, const ArrivalSource& arrivals, uint64_t seed,
                                    const std::atomic<bool>& stop) {
  Recorder rec;
  const auto start = Clock::now();
  // Requests in flight at the SLO are about rate x their time in the system; far beyond that
  // (several seconds of arrivals queued past the running ones) the queue only grows.
  const int64_t max_outstanding = 2 * setting_.max_running + static_cast<int64_t>(rate_qps * 4) + 16;
  LoadResult r = run_open_loop(
      arrivals(rate_qps, duration_s, seed), [&](std::function<void(bool)> done) { submit(rec, std::move(done)); }, stop,
      max_outstanding);
  CurvePoint p;
  p.offered_qps = r.overloaded ? rate_qps : static_cast<double>(r.sent) / duration_s;
  p.p50_ms = percentile(r.latencies_ms, 50);
  p.p99_ms = percentile(r.latencies_ms, 99);
  p.errors = r.errors + (r.overloaded ? 1 : 0);
  std::lock_guard lock(rec.mu);
  // Every request is answered in the end, so answers over time cannot tell a scheduler that keeps
  // up from one whose queue grows (a generation lasts long next to the run). What can: the
  // tokens generated while requests still arrive, after the first ones had time to come back
  // (the ramp), against the tokens those arrivals ask for. Falling behind generates at the
  // setting's peak, below the demand.
  const double ramp_s = std::min(p.p50_ms / 1e3, r.send_s / 2);
  const auto from = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ramp_s));
  const auto to = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.send_s));
  const double window_s = r.send_s - ramp_s;
  p.output_tokens_per_s = window_s > 0 ? static_cast<double>(rec.tokens_between(from, to)) / window_s : 0;
  p.achieved_qps = p.output_tokens_per_s / static_cast<double>(load_.output_tokens);
  p.ttft_p50_ms = percentile(rec.ttft_ms, 50), p.ttft_p99_ms = percentile(rec.ttft_ms, 99);
  p.itl_p50_ms = percentile(rec.itl_ms, 50), p.itl_p99_ms = percentile(rec.itl_ms, 99);
  p.utilisation = peak_tokens_per_s_ > 0 ? std::min(1.0, p.output_tokens_per_s / peak_tokens_per_s_) : 0;
  return p;
}

}  // namespace fusor::tune
