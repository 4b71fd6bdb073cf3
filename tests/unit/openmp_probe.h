// How a parallel region's barrier waits, read off the thread that waits: for tests of
// kernels/cpu/openmp_wait.h and of the threads that hand compute over (kernels/cpu/thread_pool.h).
#pragma once
#include <omp.h>
#include <sys/resource.h>

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
    omp_pause_resource_all(omp_pause_soft);
  }).join();
  return sleeps;
}

// Why barrier_sleeps cannot tell here: another OpenMP runtime than libgomp, one CPU, or libgomp's
// wait set by hand. Empty when it can.
inline const char* barrier_probe_unusable() {
  if (!cpu::openmp_runtime_is_libgomp()) return "the OpenMP runtime is not libgomp (a sanitizer build)";
  if (omp_get_num_procs() < 2) return "a team of two spins only on two CPUs";
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return "libgomp's wait is set by hand";
  return "";
}

}  // namespace fusor::test
