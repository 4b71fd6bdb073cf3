// How many compute threads this process runs: one budget, shared by every execution context.
//
// By default the budget is OMP_NUM_THREADS when set, else the CPUs this process may actually
// use: its affinity mask capped by its cgroup's CPU quota (cgroup v2 `cpu.max`, v1
// `cpu.cfs_quota_us`), rounded up. A container given "1.5 CPUs" on a 64-core host gets 2, not 64:
// more compute threads than that only queue behind each other at every barrier.
#pragma once
#include <optional>
#include <string>

namespace fusor::cpu {

int cpus_available();
int compute_budget();
// n >= 1 (checked by the caller); overrides the default for the rest of the process.
void set_compute_budget(int n);

// The quota in CPUs from the text of a cgroup v2 `cpu.max` file ("max 100000" or
// "150000 100000"); nullopt when unlimited or unreadable. Exposed for tests.
std::optional<double> parse_cpu_max(const std::string& text);

}  // namespace fusor::cpu
