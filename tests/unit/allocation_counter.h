// Counts heap allocations between start() and stop() (a test hook for the zero-allocation rule:
// the global operator new of the unit-test binary, allocation_counter.cc). Allocations made inside
// oneDNN's own execute() (it builds a small argument map per call) are counted apart: fusor cannot
// avoid them, but everything on fusor's side must be zero. Under the sanitizers, which replace the
// allocator themselves, nothing is counted: tests skip with counting_available().
#pragma once

namespace fusor::test {

struct AllocationCount {
  long fusor = 0;
  long onednn = 0;
};

bool counting_available();
void start_counting_allocations();
AllocationCount stop_counting_allocations();

}  // namespace fusor::test
