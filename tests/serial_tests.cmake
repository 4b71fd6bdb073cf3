# Tests that count how libgomp's barriers wait need the CPUs to themselves: beside another test
# (ctest -j), a spinning barrier is preempted and counts as a sleep. Read by ctest after the tests
# gtest_discover_tests found.
set_tests_properties(
  "OpenmpWait.SleepMakesBarrierWaitsSleepAndSpinMakesThemSpin"
  "GenerationScheduler.TheThreadThatBuiltThePlansKeepsNoIdleOpenmpTeam"
  PROPERTIES RUN_SERIAL TRUE)
