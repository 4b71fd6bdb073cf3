// fusor's own thread pool, which runs the parallel parts of fusor's kernels.
//
// Why not an OpenMP team: a team needs every thread at each barrier, so when the OS preempts one
// thread (a noisy neighbour, a CPU quota, the server's own network threads) the whole step waits
// for it. Here work is split into more chunks than threads and idle threads take the next chunk,
// so a preempted thread delays only the chunk it holds. The calling thread takes part, workers
// spin briefly for the next job (kernels come back to back) and then sleep.
//
// One pool per process, of compute_budget() - 1 workers. Each thread has a width: how many
// threads (itself included) may work on one of its jobs. It is the budget by default; a server's
// execution context sets its share, so contexts together never run more than the budget. A job
// started from inside a job runs inline.
#pragma once
#include <cstdint>
#include <type_traits>

namespace fusor::cpu {

// This thread's width, and setting it (n >= 1; also OpenMP's thread count for this thread,
// which oneDNN follows).
int thread_width();
void set_thread_width(int n);
// For a thread of fusor's own that runs plans (a server's execution context, a tune
// measurement's): sets its width and keeps its OpenMP team between runs.
void become_compute_thread(int width);

using ChunkFn = void (*)(void* context, int64_t chunk, int participant);
// Runs fn(context, c, p) for every chunk c in [0, chunks), on at most `max_participants` threads;
// p in [0, max_participants) tells the threads apart (for per-thread scratch). Returns when all
// chunks are done; rethrows the first exception a chunk threw.
void run_chunks(int64_t chunks, int max_participants, ChunkFn fn, void* context);

// While one lives, this thread's jobs run on an OpenMP team (dynamic schedule) instead of the
// pool: for plans whose other kernels are OpenMP's anyway, where switching between two sets of
// threads would wake one of them at every step.
class OpenmpTeamScope {
 public:
  explicit OpenmpTeamScope(bool on);
  ~OpenmpTeamScope();
  OpenmpTeamScope(const OpenmpTeamScope&) = delete;
  OpenmpTeamScope& operator=(const OpenmpTeamScope&) = delete;

 private:
  bool before_;
};

// Gives back the OpenMP team this thread's parallel regions made (libgomp keeps one per thread
// that ever started a region, until that thread exits). Call it on a thread whose compute work is
// over for now, such as the one that loaded a model and built its plans before handing the steps
// to a thread of their own: while more OpenMP threads exist in the process than CPUs, libgomp
// stops spin-waiting at every barrier of every team and sleeps at once, and an idle team still
// counts. On a 2-vCPU VM a parallel region then cost 69-86 against 36-39 us
// (build/bench/openmp_idle_team). Safe at any time outside a parallel region: the next region
// makes a new team. Does nothing under LLVM's libomp (the sanitizer builds), whose one pool
// serves every thread.
void release_openmp_team();
// After a plan ran on an OpenMP team. A thread of fusor's own keeps its team, and so does a
// caller's thread (Python's, an application's) while it is the only caller running such plans;
// once a second caller thread has, each gives its team back after its runs. Why: a pool of callers
// (a web framework's request threads, a ThreadPoolExecutor) each left an idle team, and libgomp,
// over its thread limit, made every barrier sleep: ResNet-18 from 8 Python threads in turn ran at
// 0.86x the rate of one thread, MobileNetV3-small at 0.73x (bench/python-callers).
void release_openmp_team_if_callers_share();
// Whether OpenMP is GCC's libgomp, the runtime whose per-thread teams and barrier throttling
// release_openmp_team() and openmp_wait.h are about.
bool openmp_runtime_is_libgomp();

// f(chunk, participant) for every chunk, as run_chunks.
template <class F>
void parallel_chunks(int64_t chunks, int max_participants, F&& f) {
  using Fn = std::remove_reference_t<F>;
  run_chunks(chunks, max_participants,
             [](void* ctx, int64_t c, int p) { (*static_cast<Fn*>(ctx))(c, p); }, const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace fusor::cpu
