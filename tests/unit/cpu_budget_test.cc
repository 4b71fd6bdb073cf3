// The CPU budget: cgroup quota parsing, and a count that never exceeds the affinity mask.
#include <gtest/gtest.h>
#include <sched.h>

#include "fusor/error.h"
#include "fusor/threads.h"
#include "kernels/cpu/cpu_budget.h"

namespace fusor::cpu {
namespace {

TEST(CpuBudget, ParsesCgroupV2CpuMax) {
  EXPECT_EQ(parse_cpu_max("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(parse_cpu_max("150000 100000\n").value(), 1.5);
  EXPECT_DOUBLE_EQ(parse_cpu_max("50000 100000").value(), 0.5);
  EXPECT_EQ(parse_cpu_max(""), std::nullopt);
  EXPECT_EQ(parse_cpu_max("garbage"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("100000 0"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("-1 100000"), std::nullopt);
}

TEST(CpuBudget, NeverMoreThanTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_GE(cpus_available(), 1);
  EXPECT_LE(cpus_available(), CPU_COUNT(&set));
}

TEST(CpuBudget, SetComputeThreadsRejectsZero) {
  EXPECT_THROW(set_compute_threads(0), Error);
}

}  // namespace
}  // namespace fusor::cpu
