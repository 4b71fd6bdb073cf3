#include "tune/open_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace fusor::tune {

LoadResult run_open_loop(const std::vector<double>& arrivals_s, const Submit& submit, const std::atomic<bool>& stop,
                         int64_t max_outstanding) {
  using Clock = std::chrono::steady_clock;
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    int64_t outstanding = 0, errors = 0;
    std::vector<double> latencies_ms;
    Clock::time_point last_answer;
  };
  auto shared = std::make_shared<Shared>();  // answers may outlive a throwing caller
  LoadResult r;
  const auto start = Clock::now();
  shared->last_answer = start;
  for (double t : arrivals_s) {
    if (stop.load()) break;
    const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
    std::this_thread::sleep_until(due);
    {
      std::lock_guard lock(shared->mu);
      if (shared->outstanding > max_outstanding) {
        r.overloaded = true;
        break;
      }
      ++shared->outstanding;
    }
    ++r.sent;
    submit([shared, due](bool ok) {
      auto now = Clock::now();
      std::lock_guard lock(shared->mu);
      if (ok) shared->latencies_ms.push_back(std::chrono::duration<double, std::milli>(now - due).count());
      else ++shared->errors;
      shared->last_answer = std::max(shared->last_answer, now);
      if (--shared->outstanding == 0) shared->cv.notify_all();
    });
  }
  r.send_s = std::chrono::duration<double>(Clock::now() - start).count();
  std::unique_lock lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->outstanding == 0; });
  r.latencies_ms = std::move(shared->latencies_ms);
  r.errors = shared->errors;
  r.total_s = std::chrono::duration<double>(shared->last_answer - start).count();
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace fusor::tune
