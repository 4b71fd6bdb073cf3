// How OpenMP's barriers wait (kernels/cpu/openmp_wait.h): the decision and its hysteresis, the
// variable that fixes it, and that each mode really is what libgomp's barriers then do: a thread
// waiting at a barrier sleeps (a voluntary context switch) in Sleep mode and spins in Spin mode.
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "fusor/error.h"
#include "kernels/cpu/openmp_wait.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

TEST(OpenmpWait, ContentionSwitchesToSleepAndItsEndBackToSpin) {
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Spin, 0.01), OpenmpWait::Spin);   // alone
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Spin, 0.06), OpenmpWait::Spin);   // a server's HTTP threads
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Spin, 0.35), OpenmpWait::Sleep);  // a busy process beside
  // Between the two thresholds the mode stays as it is, so a share near one does not flap.
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Spin, 0.15), OpenmpWait::Spin);
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Sleep, 0.15), OpenmpWait::Sleep);
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Sleep, 0.35), OpenmpWait::Sleep);
  EXPECT_EQ(next_openmp_wait(OpenmpWait::Sleep, 0.05), OpenmpWait::Spin);
}

TEST(OpenmpWait, TheVariableTakesSpinSleepOrAutoAndNamesItselfOtherwise) {
  EXPECT_EQ(parse_openmp_wait("spin"), OpenmpWait::Spin);
  EXPECT_EQ(parse_openmp_wait("sleep"), OpenmpWait::Sleep);
  EXPECT_EQ(parse_openmp_wait("auto"), std::nullopt);
  EXPECT_EQ(parse_openmp_wait(""), std::nullopt);
  try {
    parse_openmp_wait("fast");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("FUSOR_OPENMP_WAIT is 'fast'"), std::string::npos) << e.what();
  }
}

void busy_us(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// On a new thread, `regions` parallel regions of two threads where the second works 300 us and
// the first waits for it at the closing barrier: the first's voluntary context switches.
long barrier_sleeps(int regions) {
  long sleeps = 0;
  std::thread([&] {
    omp_set_num_threads(2);
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    for (int i = 0; i < regions; ++i) {
#pragma omp parallel
      if (omp_get_thread_num() == 1) busy_us(300);
    }
    getrusage(RUSAGE_THREAD, &after);
    sleeps = after.ru_nvcsw - before.ru_nvcsw;
    release_openmp_team();
  }).join();
  return sleeps;
}

TEST(OpenmpWait, SleepMakesBarrierWaitsSleepAndSpinMakesThemSpin) {
  if (omp_get_num_procs() < 2) GTEST_SKIP() << "a team of two spins only on two CPUs";
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) GTEST_SKIP() << "libgomp's wait is set by hand";
  release_openmp_team();  // the test runner's own idle team would count against the limit
  set_openmp_wait(OpenmpWait::Sleep);
  EXPECT_EQ(openmp_wait(), OpenmpWait::Sleep);
  EXPECT_GE(barrier_sleeps(50), 40);
  set_openmp_wait(OpenmpWait::Spin);
  EXPECT_EQ(openmp_wait(), OpenmpWait::Spin);
  EXPECT_LE(barrier_sleeps(50), 10);
}

}  // namespace
}  // namespace fusor::cpu
