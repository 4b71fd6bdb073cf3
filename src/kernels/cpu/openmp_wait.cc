#include "kernels/cpu/openmp_wait.h"

#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
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

  // Asks the parker for `mode`; with `wait`, returns once it holds what was last asked.
  void set(OpenmpWait mode, bool wait) {
    // A forked child has no parker thread (nor usable OpenMP teams); libomp has no such limit.
    if (getpid() != owner_ || !openmp_runtime_is_libgomp()) return;
    std::unique_lock lock(mu_);
    wanted_.store(mode, std::memory_order_relaxed);
    changed_.notify_all();
    if (wait) changed_.wait(lock, [&] { return held_ == wanted_.load(std::memory_order_relaxed); });
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
    if (mode) Parker::instance().set(*mode, true);
    return mode;
  }();
  return fixed;
}

// This thread's time on a CPU and waiting for one, in ns so far (the first two fields of its
// schedstat); nullopt where the kernel does not say (no procfs, schedstats off).
struct SchedTimes {
  int64_t on_cpu = 0, waiting = 0;
};
std::optional<SchedTimes> sched_times() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return std::nullopt;
  unsigned long long on_cpu = 0, waiting = 0;
  const int read = std::fscanf(f, "%llu %llu", &on_cpu, &waiting);
  std::fclose(f);
  if (read != 2 || on_cpu == 0) return std::nullopt;  // "0 0 0": a kernel without sched_info
  return SchedTimes{static_cast<int64_t>(on_cpu), static_cast<int64_t>(waiting)};
}
std::atomic<bool> g_no_sched_times{false};  // once seen, for the process: no /proc read per run

struct Window {
  std::chrono::steady_clock::time_point start{};
  std::optional<SchedTimes> at_start;
  OpenmpWait mode = OpenmpWait::Spin;  // when the streak began counting
  int streak = 0;                      // windows in a row that voted to switch
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

void set_openmp_wait(OpenmpWait mode) { Parker::instance().set(mode, true); }

OpenmpWait next_openmp_wait(OpenmpWait now, double run_delay_share, int& streak) {
  const bool against = now == OpenmpWait::Spin ? run_delay_share > kContendedShare : run_delay_share < kUncontendedShare;
  streak = against ? streak + 1 : 0;
  if (streak < kVotesToSwitch) return now;
  streak = 0;
  return now == OpenmpWait::Spin ? OpenmpWait::Sleep : OpenmpWait::Spin;
}

void openmp_wait_after_run() noexcept {
  if (!openmp_runtime_is_libgomp() || g_no_sched_times.load(std::memory_order_relaxed)) return;
  try {
    if (fixed_mode()) return;
    // Made at the first run, so that no later run (a decode step that allocates nothing) pays
    // for its thread.
    Parker& parker = Parker::instance();
    const auto now = std::chrono::steady_clock::now();
    Window& w = t_window;
    if (w.at_start && now - w.start < kContentionWindow) return;
    const std::optional<SchedTimes> times = sched_times();
    if (!times) {
      g_no_sched_times.store(true, std::memory_order_relaxed);  // libgomp's own choice stands
      return;
    }
    if (w.at_start) {
      // Of the time this thread wanted a CPU, the share it waited: idle time between runs
      // counts for neither.
      const int64_t waited = times->waiting - w.at_start->waiting;
      const int64_t wanted = waited + times->on_cpu - w.at_start->on_cpu;
      const OpenmpWait mode = parker.mode();
      if (mode != w.mode) w.mode = mode, w.streak = 0;  // another thread switched: vote afresh
      if (wanted > 0) {
        const OpenmpWait next = next_openmp_wait(mode, static_cast<double>(waited) / static_cast<double>(wanted), w.streak);
        if (next != mode) {
          w.mode = next;
          parker.set(next, false);  // the parker switches; the step goes on
        }
      }
    }
    w.start = now;
    w.at_start = times;
  } catch (...) {
    // A thread or lock the switch could not get: the run itself succeeded, and the mode stays.
  }
}

}  // namespace fusor::cpu
