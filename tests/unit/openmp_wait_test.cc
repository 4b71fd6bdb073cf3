// How OpenMP's barriers wait (kernels/cpu/openmp_wait.h): the decision and its hysteresis, the
// variable that fixes it, and that each mode really is what libgomp's barriers then do: a thread
// waiting at a barrier sleeps (a voluntary context switch) in Sleep mode and spins in Spin mode.
#include <gtest/gtest.h>

#include <vector>

#include "fusor/error.h"
#include "kernels/cpu/openmp_wait.h"
#include "kernels/cpu/thread_pool.h"
#include "openmp_probe.h"

namespace fusor::cpu {
namespace {

// The mode after each window's share in turn, from `start`.
std::vector<OpenmpWait> modes_after(OpenmpWait start, std::initializer_list<double> shares) {
  std::vector<OpenmpWait> out;
  OpenmpWait mode = start;
  int streak = 0;
  for (double share : shares) out.push_back(mode = next_openmp_wait(mode, share, streak));
  return out;
}

TEST(OpenmpWait, SustainedContentionSwitchesToSleepAndItsEndBackToSpin) {
  using enum OpenmpWait;
  // Alone (~1%) and serving a client on the same CPUs (6-16%): spin throughout.
  EXPECT_EQ(modes_after(Spin, {0.01, 0.06, 0.16, 0.12, 0.16}), std::vector<OpenmpWait>(5, Spin));
  // A busy process beside (33-42%): the second window in a row switches.
  EXPECT_EQ(modes_after(Spin, {0.35, 0.40}), (std::vector{Spin, Sleep}));
  // One contended window between quiet ones does not.
  EXPECT_EQ(modes_after(Spin, {0.35, 0.05, 0.35, 0.05}), std::vector<OpenmpWait>(4, Spin));
  // Sleeping, the busy process still shows; once it leaves, two quiet windows switch back.
  EXPECT_EQ(modes_after(Sleep, {0.35, 0.38, 0.04, 0.03}), (std::vector{Sleep, Sleep, Sleep, Spin}));
  // Between the two thresholds the mode stays as it is, so a share near one does not flap.
  EXPECT_EQ(modes_after(Spin, {0.2, 0.2, 0.2}), std::vector<OpenmpWait>(3, Spin));
  EXPECT_EQ(modes_after(Sleep, {0.2, 0.2, 0.2}), std::vector<OpenmpWait>(3, Sleep));
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

TEST(OpenmpWait, SleepMakesBarrierWaitsSleepAndSpinMakesThemSpin) {
  if (*test::barrier_probe_unusable()) GTEST_SKIP() << test::barrier_probe_unusable();
  release_openmp_team();  // the test runner's own idle team would count against the limit
  set_openmp_wait(OpenmpWait::Sleep);
  EXPECT_EQ(openmp_wait(), OpenmpWait::Sleep);
  EXPECT_GE(test::barrier_sleeps(50), 40);
  set_openmp_wait(OpenmpWait::Spin);
  EXPECT_EQ(openmp_wait(), OpenmpWait::Spin);
  EXPECT_LE(test::fewest_barrier_sleeps(50), 10);
}

}  // namespace
}  // namespace fusor::cpu
