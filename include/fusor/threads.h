// How many compute threads fusor runs. One budget for the whole process: the server's execution
// contexts share it rather than each taking all of it.
//
//   fusor::set_compute_threads(4);        // what --threads does
//   int n = fusor::compute_threads();     // 4
//
// Without a call, the budget is OMP_NUM_THREADS when set, else the CPUs this process may use:
// its affinity mask capped by its cgroup CPU quota (a container given 1.5 CPUs gets 2).
#pragma once

namespace fusor {

int compute_threads();
// n >= 1; also sets OpenMP's thread count (which oneDNN follows).
void set_compute_threads(int n);

}  // namespace fusor
