#include "kernels/cpu/thread_pool.h"

#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <immintrin.h>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_budget.h"

namespace fusor::cpu {
namespace {

// How long an idle worker polls for the next job before it sleeps. A model's kernels come back
// to back (a few to a few hundred microseconds apart), so a short spin saves a wake-up per
// kernel; longer would burn CPU a neighbour could use.
// (50, 1000 and 5000 us measured the same on MiniLM.)
constexpr auto kSpin = std::chrono::microseconds(50);

thread_local int t_width = 0;       // 0: not set yet (the budget)
thread_local bool t_in_job = false;  // inside a chunk: nested jobs run inline
thread_local bool t_openmp = false;  // OpenmpTeamScope: jobs go to an OpenMP team
thread_local bool t_own = false;     // become_compute_thread: a thread of fusor's own

struct Job {
  ChunkFn fn = nullptr;
  void* context = nullptr;
  int64_t chunks = 0;
  int max_participants = 1;
  std::atomic<int64_t> next{0};
  int joined = 1;               // participants so far, the caller being 0 (guarded by the pool's mutex)
  std::atomic<int> inside{0};   // workers still working on it
  std::once_flag error_once;
  std::exception_ptr error;

  void work(int participant) {
    for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      try {
        fn(context, c, participant);
      } catch (...) {
        std::call_once(error_once, [&] { error = std::current_exception(); });
        next.store(chunks, std::memory_order_relaxed);  // the rest is skipped
      }
    }
  }
};

// Bumped in a forked child (pthread_atfork): its pool's workers stayed in the parent.
std::atomic<int> g_forks{0};

class Pool {
 public:
  // A forked child gets a pool of its own (the old one is left: its workers' threads are gone).
  static Pool& instance() {
    static std::atomic<Pool*> pool{nullptr};
    static std::mutex creating;
    Pool* p = pool.load(std::memory_order_acquire);
    if (!p || p->forks_ != g_forks.load(std::memory_order_relaxed)) {
      std::lock_guard lock(creating);
      p = pool.load(std::memory_order_acquire);
      if (!p || p->forks_ != g_forks.load(std::memory_order_relaxed)) {
        p = new Pool();  // never destroyed: workers may outlive static destructors
        pool.store(p, std::memory_order_release);
      }
    }
    return *p;
  }

  int workers() const { return static_cast<int>(workers_.size()); }

  void run(Job& job) {
    {
      std::lock_guard lock(mu_);
      open_.push_back(&job);
    }
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();  // cheap when no worker sleeps
    t_in_job = true;
    job.work(0);
    t_in_job = false;
    {
      std::lock_guard lock(mu_);  // after this no worker joins
      open_.erase(std::find(open_.begin(), open_.end(), &job));
    }
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int v; (v = job.inside.load(std::memory_order_acquire)) != 0;) {
      if (std::chrono::steady_clock::now() < until) {
        _mm_pause();
      } else {
        job.inside.wait(v, std::memory_order_acquire);
      }
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  Pool() {
    const int n = std::max(0, compute_budget() - 1);
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { loop(); });
    for (auto& w : workers_) w.detach();
  }

  Job* join(int& participant) {
    std::lock_guard lock(mu_);
    for (Job* j : open_) {
      if (j->joined >= j->max_participants || j->next.load(std::memory_order_relaxed) >= j->chunks) continue;
      participant = j->joined++;
      j->inside.fetch_add(1, std::memory_order_relaxed);
      return j;
    }
    return nullptr;
  }

  void loop() {
    t_in_job = true;
    omp_set_num_threads(1);
    for (;;) {
      const uint64_t seen = epoch_.load(std::memory_order_acquire);
      int participant = 0;
      if (Job* job = join(participant)) {
        job->work(participant);
        if (job->inside.fetch_sub(1, std::memory_order_acq_rel) == 1) job->inside.notify_one();
        continue;
      }
      const auto until = std::chrono::steady_clock::now() + kSpin;
      while (epoch_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
        for (int i = 0; i < 64; ++i) _mm_pause();
      epoch_.wait(seen, std::memory_order_acquire);
    }
  }

  const int forks_ = g_forks.load(std::memory_order_relaxed);
  std::mutex mu_;
  std::vector<Job*> open_;             // jobs that may still take workers
  std::atomic<uint64_t> epoch_{0};     // bumped when a job opens
  std::vector<std::thread> workers_;
};

void run_on_openmp(int64_t chunks, int threads, ChunkFn fn, void* context) {
  std::exception_ptr error;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    try {
      fn(context, c, omp_get_thread_num());
    } catch (...) {
#pragma omp critical(fusor_chunk_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

OpenmpTeamScope::OpenmpTeamScope(bool on) : before_(t_openmp) { t_openmp = on; }
OpenmpTeamScope::~OpenmpTeamScope() { t_openmp = before_; }

bool openmp_runtime_is_libgomp() {
#ifdef KMP_VERSION_MAJOR  // LLVM's omp.h
  return false;
#else
  return true;
#endif
}

void release_openmp_team() {
  // libgomp frees this thread's pool alone; libomp's pause would stop the process's one pool.
  if (openmp_runtime_is_libgomp() && !omp_in_parallel()) omp_pause_resource_all(omp_pause_soft);
}

namespace {

// fork() copies only the thread that calls it. A libgomp team it kept would be waited for in the
// child, whose first parallel region then hung (a Python multiprocessing worker, forked after the
// parent ran ResNet-18); so the forking thread gives its team back first, and the child starts a
// team of its own. fusor's pool is made again in the child (Pool::instance). LLVM's libomp
// handles fork itself.
const bool g_fork_handlers = [] {
  pthread_atfork([] { release_openmp_team(); }, nullptr, [] { g_forks.fetch_add(1, std::memory_order_relaxed); });
  return true;
}();

}  // namespace

void release_openmp_team_if_callers_share() {
  if (t_own) return;
  static std::atomic<bool> shared{false};
  static std::atomic<std::thread::id> first_caller{};
  if (!shared.load(std::memory_order_relaxed)) {
    std::thread::id first{};
    if (first_caller.compare_exchange_strong(first, std::this_thread::get_id()) || first == std::this_thread::get_id())
      return;
    shared = true;
  }
  release_openmp_team();
}

int thread_width() {
  // First use on this thread: OpenMP (oneDNN's convolutions) follows the same budget, which,
  // unlike OpenMP's default, counts the cgroup quota.
  if (t_width == 0) set_thread_width(compute_budget());
  return t_width;
}

void set_thread_width(int n) {
  t_width = std::max(1, n);
  omp_set_num_threads(t_width);
}

void become_compute_thread(int width) {
  set_thread_width(width);
  t_own = true;
}

void run_chunks(int64_t chunks, int max_participants, ChunkFn fn, void* context) {
  auto run_inline = [&] {
    for (int64_t c = 0; c < chunks; ++c) fn(context, c, 0);
  };
  const int64_t useful = std::min<int64_t>(chunks, max_participants);
  if (useful <= 1 || t_in_job || omp_in_parallel()) return run_inline();
  if (t_openmp) return run_on_openmp(chunks, static_cast<int>(useful), fn, context);
  Pool& pool = Pool::instance();
  if (pool.workers() == 0) return run_inline();
  Job job;
  job.fn = fn;
  job.context = context;
  job.chunks = chunks;
  job.max_participants = static_cast<int>(std::min<int64_t>(useful, pool.workers() + 1));
  pool.run(job);
}

}  // namespace fusor::cpu
