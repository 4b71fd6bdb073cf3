// How a parallel region's barrier waits, read off the thread that waits: for tests of
// kernels/cpu/openmp_wait.h and of the threads that hand compute over (kernels/cpu/thread_pool.h).
#pragma once
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "kernels/cpu/thread_pool.h"

namespace fusor::test {

// On a new thread, `regions` parallel regions of two threads where the second works 300 us and
// the first waits for it at the closing barrier: the first's voluntary context switches, about
// one per region where barriers sleep, about none where they spin. Ends its team.
inline long barrier_sleeps(int regions) {
  long sleeps = 0;
  std::thread([&] {
    omp_set_num_threads(2);
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    for (int i = 0; i < regions; ++i) {
#pragma omp parallel
      if (omp_get_thread_num() == 1) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    }
    getrusage(RUSAGE_THREAD, &after);
    sleeps = after.ru_nvcsw - before.ru_nvcsw;
    cpu::release_openmp_team();
  }).join();
  return sleeps;
}

// The fewest of three barrier_sleeps: where barriers spin, a busy machine can only add sleeps (a
// preempted partner outlasts the spin), so the least of three is the one to check against.
inline long fewest_barrier_sleeps(int regions) {
  long fewest = barrier_sleeps(regions);
  for (int i = 0; i < 2; ++i) fewest = std::min(fewest, barrier_sleeps(regions));
  return fewest;
}

// Why barrier_sleeps cannot tell here: another OpenMP runtime than libgomp, one CPU, or libgomp's
// threads or wait set by hand. Empty when it can.
inline const char* barrier_probe_unusable() {
  if (!cpu::openmp_runtime_is_libgomp()) return "the OpenMP runtime is not libgomp (a sanitizer build)";
  if (omp_get_num_procs() < 2) return "a team of two spins only on two CPUs";
  for (const char* set_by_hand : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_THREAD_LIMIT", "OMP_DYNAMIC"})
    if (std::getenv(set_by_hand)) return "libgomp's threads or wait are set by hand";
  return "";
}

}  // namespace fusor::test
