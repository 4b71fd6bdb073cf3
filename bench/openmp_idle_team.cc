// openmp_idle_team: what an idle OpenMP team on another thread costs the thread that computes.
//
// libgomp keeps a team for each thread that ever started a parallel region, until that thread
// exits. While the process holds more OpenMP threads than CPUs (idle teams included), every
// barrier of every team stops spin-waiting and sleeps in the kernel at once, so each region pays
// a wake-up. fusor hands compute from the thread that loads a model (which packed its weights in
// parallel regions) to the scheduler's or the contexts' threads; cpu::release_openmp_team() is
// what the loading thread calls before that hand-off.
//
// Three runs of the same loop of short, uneven parallel regions on a second thread:
//   no other team      the loop's thread holds the only team
//   idle team          the main thread ran one region on every CPU first and keeps its team
//   idle team released the main thread ran one region and then called cpu::release_openmp_team()
//   openmp_idle_team [--regions N]   ->   one line per run: us per region, voluntary switches
#include <omp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kernels/cpu/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;
thread_local volatile double t_sink;  // per thread: the team's threads write at once

void busy_us(int us) {
  const auto until = Clock::now() + std::chrono::microseconds(us);
  double x = 0;
  while (Clock::now() < until) x += 1;
  t_sink = x;
}

long voluntary_switches() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return r.ru_nvcsw;
}

// Regions whose two threads work 20 and 10 us (one waits at the barrier), 15 us serial between:
// the shape of a decode step's small kernels.
void run(const char* what, int regions) {
  const long switches = voluntary_switches();
  double seconds = 0;
  std::thread compute([&] {
    omp_set_num_threads(2);
    const auto t0 = Clock::now();
    for (int i = 0; i < regions; ++i) {
#pragma omp parallel
      busy_us(omp_get_thread_num() == 0 ? 20 : 10);
      busy_us(15);
    }
    seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  compute.join();
  std::printf("%-20s %6.1f us per region, %7ld voluntary switches\n", what, seconds / regions * 1e6,
              voluntary_switches() - switches);
}

// As a loader with the whole budget leaves it: one thread per CPU.
void start_main_team() {
  omp_set_num_threads(omp_get_num_procs());
#pragma omp parallel
  t_sink = omp_get_thread_num();
}

}  // namespace

int main(int argc, char** argv) {
  int regions = 20000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--regions") == 0 && i + 1 < argc) {
      regions = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: openmp_idle_team [--regions N]\n");
      return 2;
    }
  }
  if (regions < 1) {
    std::fprintf(stderr, "openmp_idle_team: --regions must be at least 1\n");
    return 2;
  }
  run("no other team", regions);
  start_main_team();
  run("idle team", regions);
  fusor::cpu::release_openmp_team();
  run("idle team released", regions);
  return 0;
}
