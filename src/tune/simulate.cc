#include "tune/simulate.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>

#include "serve/arrival_rate.h"
#include "serve/batch_assembly.h"
#include "serve/batch_window.h"
#include "tune/arrivals.h"
#include "tune/open_loop.h"

namespace fusor::tune {

double ServiceTimes::at(int64_t rows) const {
  if (ms_by_rows.empty()) return 0;
  auto hi = ms_by_rows.lower_bound(rows);
  if (hi != ms_by_rows.end() && hi->first == rows) return hi->second;
  if (hi == ms_by_rows.begin()) return hi->second * static_cast<double>(rows) / static_cast<double>(hi->first);
  if (hi == ms_by_rows.end()) --hi;  // beyond the last: extend the last segment's slope
  auto lo = std::prev(hi);
  if (lo == hi) return hi->second;
  double slope = (hi->second - lo->second) / static_cast<double>(hi->first - lo->first);
  return std::max(0.0, lo->second + slope * static_cast<double>(rows - lo->first));
}

namespace {

using Clock = serve::FormingBatch::Clock;

// The rows that fill a batch, as the batcher counts them: max_batch or the largest preferred size.
int64_t batch_target(const TrafficClass& cls) {
  return cls.preferred_batch_sizes.empty() ? cls.max_batch : cls.preferred_batch_sizes.back();
}

SimResult summarise(const std::vector<double>& latencies_ms, double busy_s, double span_s, size_t contexts,
                    size_t batches) {
  SimResult r;
  r.p50_ms = percentile(latencies_ms, 50);
  r.p99_ms = percentile(latencies_ms, 99);
  r.achieved_qps = static_cast<double>(latencies_ms.size()) / span_s;
  r.utilisation = busy_s / (span_s * static_cast<double>(contexts));
  r.mean_batch = static_cast<double>(latencies_ms.size()) / static_cast<double>(batches);
  return r;
}

// The fixed window in closed form: batches leave in FIFO order, each when full or when its
// oldest has waited the window, whichever comes first, or later when the first context to free
// up does.
SimResult simulate_fixed_window(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                const std::vector<double>& arrivals_s) {
  const double window = cls.batch_window_ms / 1e3;
  const size_t max_batch = static_cast<size_t>(std::max<int64_t>(1, cls.max_batch));
  const size_t target = static_cast<size_t>(std::max<int64_t>(1, batch_target(cls)));
  std::vector<double> free_at(static_cast<size_t>(std::max<int64_t>(1, contexts)), 0.0);
  std::deque<double> queue;
  std::vector<double> latencies;
  latencies.reserve(arrivals_s.size());
  size_t next = 0, batches = 0;
  double busy = 0, last_done = 0;
  while (next < arrivals_s.size() || !queue.empty()) {
    if (queue.empty()) queue.push_back(arrivals_s[next++]);
    size_t missing = queue.size() >= target ? 0 : target - queue.size();
    double full_at = missing == 0 ? queue.front()
                     : next + missing - 1 < arrivals_s.size() ? arrivals_s[next + missing - 1]
                                                               : std::numeric_limits<double>::infinity();
    double ready = std::min(queue.front() + window, full_at);
    auto worker = std::min_element(free_at.begin(), free_at.end());
    double start = std::max(ready, *worker);
    while (next < arrivals_s.size() && arrivals_s[next] <= start) queue.push_back(arrivals_s[next++]);
    size_t n = std::min(max_batch, queue.size());
    double service = times.at(serve::padded_rows(cls, true, static_cast<int64_t>(n))) / 1e3;
    double done = start + service;
    for (size_t i = 0; i < n; ++i) {
      latencies.push_back((done - queue.front()) * 1e3);
      queue.pop_front();
    }
    *worker = done;
    busy += service;
    last_done = std::max(last_done, done);
    ++batches;
  }
  return summarise(latencies, busy, std::max(last_done, arrivals_s.back()), free_at.size(), batches);
}

}  // namespace

SimResult simulate_events(const TrafficClass& cls, int64_t contexts, const BatchRule& rule,
                          const std::vector<double>& arrivals_s, const std::vector<int64_t>& tokens) {
  if (arrivals_s.empty()) return {};
  using ms = std::chrono::duration<double, std::milli>;
  auto time_at = [&](size_t i) {
    return Clock::time_point{} + std::chrono::round<Clock::duration>(std::chrono::duration<double>(arrivals_s[i]));
  };
  const bool adaptive = cls.adaptive_window;
  serve::FormingBatch forming;  // as Batcher::take_ready fills it
  forming.window = std::chrono::duration_cast<Clock::duration>(ms(cls.batch_window_ms));
  forming.target = rule.target;
  forming.adaptive = adaptive;
  serve::ArrivalRate rate;  // the batcher's estimate for the class's one group (adaptive only)
  std::vector<Clock::time_point> free_at(static_cast<size_t>(std::max<int64_t>(1, contexts)));
  std::deque<SimRequest> queue;
  std::vector<Clock::time_point> taken;
  std::vector<double> latencies;
  latencies.reserve(arrivals_s.size());
  size_t next = 0, batches = 0;
  Clock::duration busy{};
  Clock::time_point last_done{}, now = time_at(0), next_arrival = now;
  while (true) {
    // What happened by `now`: arrivals (Batcher::submit), contexts freed (their batch ran).
    while (next < arrivals_s.size() && next_arrival <= now) {
      queue.push_back({next_arrival, tokens.empty() ? 1 : std::max<int64_t>(1, tokens[next % tokens.size()])});
      if (adaptive) rate.arrived(next_arrival);
      if (++next < arrivals_s.size()) next_arrival = time_at(next);
    }
    int64_t idle = std::count_if(free_at.begin(), free_at.end(), [&](Clock::time_point t) { return t <= now; });
    // Idle contexts take closed batches (take_ready), then the hold state is noted (note_holds).
    auto closes = Clock::time_point::max();
    while (!queue.empty()) {
      forming.oldest = queue.front().arrived;
      forming.rows = rule.size(queue);
      forming.idle_contexts = idle;
      if (adaptive) forming.expected_gap = rate.expected_gap();
      closes = serve::batch_closes_at(forming);
      if (idle == 0 || closes > now) break;
      taken.clear();
      const Clock::duration service = rule.take(queue, taken);
      auto& context = *std::find_if(free_at.begin(), free_at.end(), [&](Clock::time_point t) { return t <= now; });
      context = now + service;
      for (Clock::time_point a : taken) latencies.push_back(ms(context - a).count());
      busy += service;
      last_done = std::max(last_done, context);
      ++batches;
      --idle;
    }
    if (adaptive) rate.hold(now, idle > 0 && !queue.empty());
    if (next == arrivals_s.size() && queue.empty()) break;
    // The next event that can change the forming batch: an arrival, its close time while a
    // context is idle, or while none is the first context to free up.
    auto then = next < arrivals_s.size() ? next_arrival : Clock::time_point::max();
    if (!queue.empty()) then = std::min(then, idle > 0 ? closes : *std::min_element(free_at.begin(), free_at.end()));
    now = then;
  }
  const auto end = std::max(last_done, time_at(arrivals_s.size() - 1));
  const double span_s = std::chrono::duration<double>(end - Clock::time_point{}).count();
  return summarise(latencies, std::chrono::duration<double>(busy).count(), span_s, free_at.size(), batches);
}

SimResult simulate_batcher_events(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                  const std::vector<double>& arrivals_s) {
  const size_t max_batch = static_cast<size_t>(std::max<int64_t>(1, cls.max_batch));
  BatchRule rows;
  rows.target = batch_target(cls);
  rows.size = [](const std::deque<SimRequest>& queue) { return static_cast<int64_t>(queue.size()); };
  rows.take = [&](std::deque<SimRequest>& queue, std::vector<Clock::time_point>& taken) {
    const size_t n = std::min(max_batch, queue.size());
    for (size_t i = 0; i < n; ++i) {
      taken.push_back(queue.front().arrived);
      queue.pop_front();
    }
    const int64_t padded = serve::padded_rows(cls, true, static_cast<int64_t>(n));
    return std::chrono::round<Clock::duration>(std::chrono::duration<double, std::milli>(times.at(padded)));
  };
  return simulate_events(cls, contexts, rows, arrivals_s);
}

SimResult simulate_batcher(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                           const std::vector<double>& arrivals_s) {
  if (arrivals_s.empty()) return {};
  return cls.adaptive_window ? simulate_batcher_events(cls, contexts, times, arrivals_s)
                             : simulate_fixed_window(cls, contexts, times, arrivals_s);
}

double simulated_capacity(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times, double p99_ms) {
  // The most the contexts could ever do: full batches back to back.
  const int64_t rows = serve::padded_rows(cls, true, cls.max_batch);
  double ceiling = static_cast<double>(contexts * cls.max_batch) / std::max(1e-6, times.at(rows) / 1e3);
  auto meets = [&](double rate) {
    // ~3000 arrivals: enough for a p99, quick to simulate; three seeds, the worst one counts.
    double duration = 3000.0 / rate;
    for (uint64_t seed : {11u, 12u, 13u})
      if (simulate_batcher(cls, contexts, times, poisson_arrivals(rate, duration, seed)).p99_ms > p99_ms) return false;
    return true;
  };
  double lo = 0, hi = ceiling;
  if (!meets(ceiling * 0.01)) return 0;
  lo = ceiling * 0.01;
  for (int i = 0; i < 14; ++i) {
    double mid = (lo + hi) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace fusor::tune
