// fusor/threads.h: the process's compute-thread budget (kernels/cpu/cpu_budget.h holds it).
#include "fusor/threads.h"

#include <string>

#include "fusor/error.h"
#include "kernels/cpu/cpu_budget.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor {

int compute_threads() { return cpu::compute_budget(); }

void set_compute_threads(int n) {
  if (n < 1) throw Error("the thread count must be at least 1, got " + std::to_string(n), ErrorKind::InvalidArgument);
  cpu::set_compute_budget(n);
  cpu::set_thread_width(n);
}

}  // namespace fusor
