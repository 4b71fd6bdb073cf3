#include "kernels/cpu/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace fusor::cpu {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// The cgroup this process is in (the v2 unified line "0::/path" of /proc/self/cgroup).
std::optional<double> cgroup_quota() {
  std::istringstream lines(read_file("/proc/self/cgroup"));
  std::string line, v2_path;
  while (std::getline(lines, line))
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
  if (auto q = parse_cpu_max(read_file("/sys/fs/cgroup" + v2_path + "/cpu.max"))) return q;
  if (auto q = parse_cpu_max(read_file("/sys/fs/cgroup/cpu.max"))) return q;
  // cgroup v1: quota and period in two files, -1 for unlimited.
  std::istringstream quota(read_file("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")),
      period(read_file("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
  double q = -1, p = 0;
  if ((quota >> q) && (period >> p) && q > 0 && p > 0) return q / p;
  return std::nullopt;
}

std::atomic<int> chosen_budget{0};  // set_compute_budget's value; 0: the default

int from_environment() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env == nullptr) return 0;
  const int n = std::atoi(env);  // "4" or "4,2" (nested levels): the first level
  return n > 0 ? n : 0;
}

}  // namespace

std::optional<double> parse_cpu_max(const std::string& text) {
  std::istringstream s(text);
  std::string quota;
  double period = 0;
  if (!(s >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  try {
    double q = std::stod(quota);
    if (q <= 0) return std::nullopt;
    return q / period;
  } catch (...) {
    return std::nullopt;
  }
}

int cpus_available() {
  static const int cpus = [] {
    int n = affinity_cpus();
    if (auto q = cgroup_quota()) n = std::min(n, std::max(1, static_cast<int>(std::ceil(*q - 1e-9))));
    return n;
  }();
  return cpus;
}

int compute_budget() {
  if (int n = chosen_budget.load()) return n;
  static const int from_env = from_environment();
  static const int by_default = from_env ? from_env : cpus_available();
  return by_default;
}

void set_compute_budget(int n) { chosen_budget.store(n); }

}  // namespace fusor::cpu
