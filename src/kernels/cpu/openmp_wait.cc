#include "kernels/cpu/openmp_wait.h"

#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "fusor/error.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

// The thread that holds the idle team while the mode is Sleep. A team lives on the thread that
// started it, so one thread of our own has to keep it; it does nothing else.
class Parker {
 public:
  static Parker& instance() {
    static Parker* parker = new Parker();  // never destroyed: its thread may outlive static destructors
    return *parker;
  }

  OpenmpWait mode() const { return wanted_.load(std::memory_order_relaxed); }

  void set(OpenmpWait mode) {
    if (getpid() != owner_) return;  // a forked child has no parker thread (nor usable OpenMP teams)
    std::unique_lock lock(mu_);
    wanted_.store(mode, std::memory_order_relaxed);
    changed_.notify_all();
    changed_.wait(lock, [&] { return held_ == wanted_.load(std::memory_order_relaxed); });
  }

 private:
  Parker() {
    std::thread([this] { loop(); }).detach();
  }

  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      changed_.wait(lock, [&] { return held_ != wanted_.load(std::memory_order_relaxed); });
      const OpenmpWait want = wanted_.load(std::memory_order_relaxed);
      lock.unlock();
      if (want == OpenmpWait::Sleep) {
        // Every CPU's worth of threads, idle from here on: whatever the compute teams' sizes, the
        // process then holds more OpenMP threads than CPUs (on a 64-CPU host, 65 sleeping threads
        // while the CPUs are contended).
        const int n = omp_get_num_procs() + 1;
#pragma omp parallel num_threads(n)
        { static_cast<void>(omp_get_thread_num()); }
      } else {
        release_openmp_team();
      }
      lock.lock();
      held_ = want;
      changed_.notify_all();
    }
  }

  const pid_t owner_ = getpid();
  std::mutex mu_;
  std::condition_variable changed_;
  std::atomic<OpenmpWait> wanted_{OpenmpWait::Spin};
  OpenmpWait held_ = OpenmpWait::Spin;  // guarded by mu_
};

// The mode FUSOR_OPENMP_WAIT fixes, read once; nullopt for auto. A bad value throws (and so is
// read again next time).
std::optional<OpenmpWait> fixed_mode() {
  static const std::optional<OpenmpWait> fixed = [] {
    const char* text = std::getenv("FUSOR_OPENMP_WAIT");
    std::optional<OpenmpWait> mode = parse_openmp_wait(text ? text : "auto");
    if (mode) Parker::instance().set(*mode);
    return mode;
  }();
  return fixed;
}

// This thread's run-queue delay so far in ns (the second field of its schedstat), or -1 where
// the kernel does not say (no procfs, no schedstats).
int64_t run_delay_ns() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return -1;
  unsigned long long on_cpu = 0, waiting = 0;
  const int read = std::fscanf(f, "%llu %llu", &on_cpu, &waiting);
  std::fclose(f);
  return read == 2 ? static_cast<int64_t>(waiting) : -1;
}

struct Window {
  std::chrono::steady_clock::time_point start{};
  int64_t delay_at_start = -1;
  int streak = 0;  // windows in a row that voted to switch
};
thread_local Window t_window;

}  // namespace

std::optional<OpenmpWait> parse_openmp_wait(const std::string& text) {
  if (text == "spin") return OpenmpWait::Spin;
  if (text == "sleep") return OpenmpWait::Sleep;
  if (text == "auto" || text.empty()) return std::nullopt;
  throw Error("FUSOR_OPENMP_WAIT is '" + text + "'; expected spin, sleep or auto", ErrorKind::InvalidArgument);
}

OpenmpWait openmp_wait() { return Parker::instance().mode(); }

void apply_openmp_wait_variable() { fixed_mode(); }

void set_openmp_wait(OpenmpWait mode) { Parker::instance().set(mode); }

OpenmpWait next_openmp_wait(OpenmpWait now, double run_delay_share, int& streak) {
  const bool against = now == OpenmpWait::Spin ? run_delay_share > kContendedShare : run_delay_share < kUncontendedShare;
  streak = against ? streak + 1 : 0;
  if (streak < kVotesToSwitch) return now;
  streak = 0;
  return now == OpenmpWait::Spin ? OpenmpWait::Sleep : OpenmpWait::Spin;
}

void openmp_wait_after_run() {
  if (fixed_mode() || !openmp_runtime_is_libgomp()) return;
  const auto now = std::chrono::steady_clock::now();
  Window& w = t_window;
  if (w.delay_at_start >= 0 && now - w.start < kContentionWindow) return;
  const int64_t delay = run_delay_ns();
  if (delay < 0) return;  // nothing to go by: libgomp's own choice stands
  if (w.delay_at_start >= 0) {
    const double share = static_cast<double>(delay - w.delay_at_start) /
                         static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - w.start).count());
    const OpenmpWait mode = openmp_wait();
    const OpenmpWait next = next_openmp_wait(mode, share, w.streak);
    if (next != mode) set_openmp_wait(next);
  }
  w.start = now;
  w.delay_at_start = delay;
}

}  // namespace fusor::cpu
