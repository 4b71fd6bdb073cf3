// How OpenMP's barriers wait, spinning or sleeping, chosen by how contended the CPUs are.
//
// Why: libgomp spins at a barrier for a while before it sleeps, unless the process holds more
// OpenMP threads than CPUs; then it sleeps at once (GCC's manual, GOMP_SPINCOUNT). Neither is
// right everywhere. llama-tiny at 16 streams on the 2-vCPU host made 1.35x the tokens spinning on
// quiet CPUs, and ~0.6x beside one busy process, where a barrier spins on while its partner waits
// for a CPU (docs/benchmarks.md, fifteenth stop). libgomp has no call that changes its wait at
// run time, but the thread count is ours: a parked thread holding an idle team of
// omp_get_num_procs() + 1 threads puts the process over the limit (sleep), and releasing that
// team brings it back (spin).
//
// Which one: a thread that runs plans on an OpenMP team calls openmp_wait_after_run() after each
// run. Once per 250 ms window it reads its schedstat (/proc/thread-self/schedstat): of the time
// it wanted a CPU, the share it spent waiting for one votes. Over 25% the CPUs are contended
// (sleep), under 15% they are not (spin); two votes in a row switch. Measured on that host: ~1%
// for a process alone, 6-16% while a server streams 16 answers to a client on the same CPUs,
// 33-42% beside one busy process, in either mode.
//
// FUSOR_OPENMP_WAIT=spin or sleep fixes the mode for the process; auto (the default) follows the
// CPUs. OMP_WAIT_POLICY and GOMP_SPINCOUNT still set what libgomp's spinning is; OMP_THREAD_LIMIT
// or OMP_DYNAMIC can shrink the parked team below the limit, and then sleep changes nothing.
// Under LLVM's libomp (the sanitizer builds) none of this applies and nothing switches.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fusor::cpu {

enum class OpenmpWait { Spin, Sleep };

// The mode last asked for (the parker may still be switching to it).
OpenmpWait openmp_wait();
// Switches now (FUSOR_OPENMP_WAIT and tests): returns once the parker holds the mode last asked
// for, normally this one.
void set_openmp_wait(OpenmpWait mode);

// Reads FUSOR_OPENMP_WAIT once and fixes the mode when it names one; throws fusor::Error
// (InvalidArgument) naming the variable on any value but spin, sleep or auto, on every call.
void apply_openmp_wait_variable();

// After a run on an OpenMP team: measures this thread's window and asks the parker to switch
// when it says so, without waiting for it. Cheap: a clock read, and a /proc read once a window.
// Never throws: a switch it cannot make leaves the mode as it is.
void openmp_wait_after_run() noexcept;

// The decision after one more window, given the mode now and the share of the window spent
// waiting for a CPU; `streak` counts the windows in a row that voted for the other mode.
OpenmpWait next_openmp_wait(OpenmpWait now, double run_delay_share, int& streak);
inline constexpr double kContendedShare = 0.25;    // votes Spin -> Sleep above this
inline constexpr double kUncontendedShare = 0.15;  // votes Sleep -> Spin below this
inline constexpr int kVotesToSwitch = 2;
inline constexpr std::chrono::milliseconds kContentionWindow{250};

// "spin", "sleep" or "auto" (nullopt); anything else throws fusor::Error naming the variable.
std::optional<OpenmpWait> parse_openmp_wait(const std::string& text);

}  // namespace fusor::cpu
