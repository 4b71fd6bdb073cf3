// Small helpers shared by the CPU kernels: request checks, OpenMP work splitting, the ISA tag
// used in kernel names.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/kernel.h"

namespace fusor::cpu {

// Elementwise work is split over OpenMP threads only above this many elements.
inline constexpr int64_t kParallelThreshold = 64 * 1024;

#if defined(__AVX512F__)
inline constexpr const char* kIsa = "avx512";
#elif defined(__AVX2__)
inline constexpr const char* kIsa = "avx2";
#else
inline constexpr const char* kIsa = "generic";
#endif

inline bool input_is(const KernelRequest& r, size_t i, DType t) {
  return i < r.inputs.size() && r.inputs[i].dtype == t;
}
inline bool has_input(const KernelRequest& r, size_t i) {
  return i < r.inputs.size() && r.inputs[i].dtype != DType::Undefined && r.node.inputs[i] >= 0;
}
inline const Tensor* constant_input(const KernelRequest& r, size_t i) {
  return i < r.constants.size() ? r.constants[i] : nullptr;
}
// Number of outputs the node actually produces (omitted optional outputs are -1).
inline size_t used_outputs(const KernelRequest& r) {
  size_t n = 0;
  for (size_t i = 0; i < r.node.outputs.size(); ++i)
    if (r.node.outputs[i] >= 0) n = i + 1;
  return n;
}

// Runs f(begin, end) over [0, n) in chunks that are multiples of `align`, in parallel when
// `work` (elements touched) is above the threshold and we are not already inside a team.
template <class F>
void parallel_range(int64_t n, int64_t work, int64_t align, F&& f) {
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (work < kParallelThreshold || threads <= 1 || n <= align) {
    f(int64_t{0}, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, (n + align - 1) / align);
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t per = (n + chunks - 1) / chunks;
    per = (per + align - 1) / align * align;
    int64_t b = std::min(n, c * per), e = std::min(n, b + per);
    if (b < e) f(b, e);
  }
}

}  // namespace fusor::cpu
