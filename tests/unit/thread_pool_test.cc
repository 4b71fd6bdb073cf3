// The thread pool: every chunk runs exactly once, participants stay within the limit (they index
// per-thread scratch), errors reach the caller, nested jobs run inline, and concurrent callers
// (a server's execution contexts) each get all their chunks.
#include <gtest/gtest.h>

#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

TEST(ThreadPool, EveryChunkRunsOnceWithParticipantsInRange) {
  for (int width : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> runs(1000);
    std::atomic<int> bad_participant{0};
    parallel_chunks(1000, width, [&](int64_t c, int p) {
      runs[static_cast<size_t>(c)].fetch_add(1);
      if (p < 0 || p >= width) bad_participant.fetch_add(1);
    });
    for (size_t c = 0; c < runs.size(); ++c) ASSERT_EQ(runs[c].load(), 1) << "chunk " << c << " width " << width;
    EXPECT_EQ(bad_participant.load(), 0);
  }
}

TEST(ThreadPool, ParticipantsNeverShareAChunkConcurrently) {
  // Each participant owns a slot; two threads with the same participant number at once would
  // corrupt per-thread scratch.
  const int width = 4;
  std::vector<std::atomic<int>> busy(width);
  std::atomic<int> clashes{0};
  parallel_chunks(2000, width, [&](int64_t, int p) {
    if (busy[static_cast<size_t>(p)].fetch_add(1) != 0) clashes.fetch_add(1);
    volatile double x = 0;
    for (int i = 0; i < 200; ++i) x = x + i;
    busy[static_cast<size_t>(p)].fetch_sub(1);
  });
  EXPECT_EQ(clashes.load(), 0);
}

TEST(ThreadPool, AnExceptionReachesTheCaller) {
  EXPECT_THROW(parallel_chunks(100, 4, [](int64_t c, int) {
                 if (c == 37) throw std::runtime_error("chunk 37");
               }),
               std::runtime_error);
  std::atomic<int> after{0};  // the pool still works
  parallel_chunks(50, 4, [&](int64_t, int) { after.fetch_add(1); });
  EXPECT_EQ(after.load(), 50);
}

TEST(ThreadPool, NestedJobsRunInline) {
  std::atomic<int> inner{0}, bad{0};
  parallel_chunks(8, 4, [&](int64_t, int) {
    parallel_chunks(10, 4, [&](int64_t, int p) {
      inner.fetch_add(1);
      if (p != 0) bad.fetch_add(1);  // inline: always participant 0 of the nested job
    });
  });
  EXPECT_EQ(inner.load(), 80);
  EXPECT_EQ(bad.load(), 0);
}

TEST(ThreadPool, ConcurrentCallersEachGetAllTheirChunks) {
  std::vector<std::thread> callers;
  std::vector<std::atomic<long>> sums(4);
  for (size_t t = 0; t < sums.size(); ++t)
    callers.emplace_back([&, t] {
      set_thread_width(2);
      for (int round = 0; round < 50; ++round)
        parallel_chunks(64, 2, [&](int64_t c, int) { sums[t].fetch_add(c + 1); });
    });
  for (auto& c : callers) c.join();
  for (auto& s : sums) EXPECT_EQ(s.load(), 50L * 64 * 65 / 2);
}

TEST(ThreadPool, ParallelRangeCoversTheRangeInAlignedPieces) {
  for (int64_t n : {int64_t{1}, int64_t{63}, int64_t{64}, int64_t{100000}, int64_t{1 << 20}}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::atomic<int> misaligned{0};
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) {
      if (b % 64 != 0) misaligned.fetch_add(1);
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i << " of " << n;
    EXPECT_EQ(misaligned.load(), 0);
  }
}

size_t threads_in_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// The count once it settles at `expected` (a released thread leaves /proc a moment after it is
// told to exit), or whatever it is after 5 s.
size_t threads_in_process_settling_at(size_t expected) {
  for (int i = 0; i < 500 && threads_in_process() != expected; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return threads_in_process();
}

// A thread that ran a parallel region keeps its team until it exits; releasing it ends the team's
// threads (libgomp throttles every other team's barriers while idle ones count: thread_pool.h).
// On a thread of its own, so that the test runner's team does not count; and a region after the
// release still runs on a team of its own again.
TEST(ThreadPool, ReleasingTheOpenmpTeamEndsItsThreads) {
  if (!openmp_runtime_is_libgomp()) GTEST_SKIP() << "libomp keeps one pool for the process";
  std::thread([] {
    const size_t before = threads_in_process();
    omp_set_num_threads(3);
    std::atomic<int> ran{0};
#pragma omp parallel
    ran.fetch_add(1);
    ASSERT_EQ(ran.load(), 3);
    EXPECT_EQ(threads_in_process(), before + 2);  // the team's two workers stay after the region
    release_openmp_team();
    EXPECT_EQ(threads_in_process_settling_at(before), before);
#pragma omp parallel
    ran.fetch_add(1);
    EXPECT_EQ(ran.load(), 6);
    release_openmp_team();
  }).join();
}

// After a run on an OpenMP team: once two callers' threads have run, a caller's thread gives its
// team back (a pool of request threads would each keep one idle: thread_pool.h), while a thread
// of fusor's own keeps its team between runs. tests/python/test_threads.py checks, in a fresh
// process, that a caller running alone keeps its team.
TEST(ThreadPool, CallersThatShareGiveTheirTeamBackAndOwnThreadsKeepTheirs) {
  if (!openmp_runtime_is_libgomp()) GTEST_SKIP() << "libomp keeps one pool for the process";
  auto run_on_a_team = [] {
    omp_set_num_threads(3);
    std::atomic<int> ran{0};
#pragma omp parallel
    ran.fetch_add(1);
    ASSERT_EQ(ran.load(), 3);
    release_openmp_team_if_callers_share();
  };
  std::atomic<bool> ran_first{false}, leave{false};
  std::thread first([&] {  // alive while the second runs: two distinct callers
    run_on_a_team();
    ran_first = true;
    while (!leave) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!ran_first) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread([&] {
    const size_t before = threads_in_process();
    run_on_a_team();
    EXPECT_EQ(threads_in_process_settling_at(before), before);  // a caller among several: given back
    become_compute_thread(3);
    run_on_a_team();
    EXPECT_EQ(threads_in_process(), before + 2);  // fusor's own: the team's two workers stay
    release_openmp_team();
  }).join();
  leave = true;
  first.join();
}

// fork() copies only the calling thread. A child forked after this thread ran a parallel region
// (and a pool job) still runs both: before, its first region waited forever for the parent's team
// (a Python multiprocessing worker forked after the parent ran ResNet-18). A hung child is killed
// by its alarm.
TEST(ThreadPool, AForkedChildRunsParallelRegionsAndPoolJobs) {
  // The hang was libgomp's. The sanitizer builds run LLVM's libomp, which handles fork itself,
  // and clang 14's ASan allocator, whose locks a fork of a threaded process can leave held in the
  // child (its first thread start then waits forever in calloc).
  if (!openmp_runtime_is_libgomp()) GTEST_SKIP() << "libomp handles fork itself";
  auto work_everywhere = [] {
    omp_set_num_threads(2);
    std::atomic<int> ran{0};
#pragma omp parallel
    ran.fetch_add(1);
    std::atomic<int64_t> chunks{0};
    parallel_chunks(64, 2, [&](int64_t, int) { chunks.fetch_add(1); });
    return ran.load() == 2 && chunks.load() == 64;
  };
  ASSERT_TRUE(work_everywhere());  // this thread now has a team, and the pool its workers
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);
    _exit(work_everywhere() && work_everywhere() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status) << " (14: it hung)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(work_everywhere());  // and the parent goes on
}

}  // namespace
}  // namespace fusor::cpu

namespace fusor::cpu {
namespace {

TEST(ThreadPool, UnderAnOpenmpTeamScopeJobsStillRunEveryChunkOnce) {
  OpenmpTeamScope team(true);
  std::vector<std::atomic<int>> runs(500);
  std::atomic<int> bad_participant{0};
  parallel_chunks(500, 2, [&](int64_t c, int p) {
    runs[static_cast<size_t>(c)].fetch_add(1);
    if (p < 0 || p >= 2) bad_participant.fetch_add(1);
  });
  for (auto& r : runs) ASSERT_EQ(r.load(), 1);
  EXPECT_EQ(bad_participant.load(), 0);
  EXPECT_THROW(parallel_chunks(10, 2, [](int64_t c, int) {
                 if (c == 3) throw std::runtime_error("chunk 3");
               }),
               std::runtime_error);
}

}  // namespace
}  // namespace fusor::cpu
