#include "tune/simulate.h"

#include <algorithm>
#include <deque>
#include <limits>

#include "serve/batch_assembly.h"
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

SimResult simulate_batcher(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                           const std::vector<double>& arrivals_s) {
  SimResult r;
  if (arrivals_s.empty()) return r;
  const double window = cls.batch_window_ms / 1e3;
  const size_t max_batch = static_cast<size_t>(std::max<int64_t>(1, cls.max_batch));
  std::vector<double> free_at(static_cast<size_t>(std::max<int64_t>(1, contexts)), 0.0);
  std::deque<double> queue;
  std::vector<double> latencies;
  latencies.reserve(arrivals_s.size());
  size_t next = 0, batches = 0;
  double busy = 0, last_done = 0;
  while (next < arrivals_s.size() || !queue.empty()) {
    if (queue.empty()) queue.push_back(arrivals_s[next++]);
    // Ready when full or when the oldest has waited the window, whichever comes first.
    size_t missing = queue.size() >= max_batch ? 0 : max_batch - queue.size();
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
  double span = std::max(last_done, arrivals_s.back());
  r.p50_ms = percentile(latencies, 50);
  r.p99_ms = percentile(latencies, 99);
  r.achieved_qps = static_cast<double>(latencies.size()) / span;
  r.utilisation = busy / (span * static_cast<double>(free_at.size()));
  r.mean_batch = static_cast<double>(latencies.size()) / static_cast<double>(batches);
  return r;
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
