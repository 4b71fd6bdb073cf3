#include "tune/closed_loop.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace fusor::tune {

ClosedLoopResult run_closed_loop(const Submit& submit, int64_t in_flight, double duration_s,
                                 const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    int64_t outstanding = 0, answered = 0, errors = 0;
    Clock::time_point last_answer;
  };
  auto shared = std::make_shared<Shared>();  // answers may outlive a throwing caller
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
  shared->last_answer = start;
  in_flight = std::max<int64_t>(1, in_flight);
  while (!stop.load() && Clock::now() < end) {
    {
      std::unique_lock lock(shared->mu);
      if (!shared->cv.wait_until(lock, end, [&] { return shared->outstanding < in_flight; })) break;
      ++shared->outstanding;
    }
    submit([shared](bool ok) {
      const auto now = Clock::now();
      std::lock_guard lock(shared->mu);
      ++(ok ? shared->answered : shared->errors);
      shared->last_answer = std::max(shared->last_answer, now);
      --shared->outstanding;
      shared->cv.notify_all();
    });
  }
  std::unique_lock lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->outstanding == 0; });
  ClosedLoopResult r;
  r.answered = shared->answered;
  r.errors = shared->errors;
  r.seconds = std::chrono::duration<double>(shared->last_answer - start).count();
  return r;
}

}  // namespace fusor::tune
