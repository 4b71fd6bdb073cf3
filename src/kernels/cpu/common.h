// Small helpers shared by the CPU kernels: request checks, work splitting over the thread pool, the ISA tag
// used in kernel names.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kernels/cpu/thread_pool.h"
#include "kernels/kernel.h"

namespace fusor::cpu {

// Elementwise work is split over threads only above this many elements.
inline constexpr int64_t kParallelThreshold = 64 * 1024;

#if defined(__AVX512F__)
inline constexpr const char* kIsa = "avx512";
#elif defined(__AVX2__)
inline constexpr const char* kIsa = "avx2";
#else
inline constexpr const char* kIsa = "generic";
#endif

// Whether the environment leaves the kernel choice `name` on (anything but "0"); for comparisons.
inline bool env_switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

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

// Chunks per thread for parallel_range: more chunks than threads, so a thread the OS preempts
// delays one chunk while the others take the rest.
inline constexpr int64_t kChunksPerThread = 4;

// Runs f(begin, end) over [0, n) in chunks that are multiples of `align`, on fusor's thread
// pool when `work` (elements touched) is above the threshold and this thread may use others.
template <class F>
void parallel_range(int64_t n, int64_t work, int64_t align, F&& f) {
  const int width = thread_width();
  if (work < kParallelThreshold || width <= 1 || n <= align) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t units = (n + align - 1) / align;
  const int64_t per = (units + width * kChunksPerThread - 1) / (width * kChunksPerThread) * align;
  parallel_chunks((n + per - 1) / per, width, [&](int64_t c, int) { f(c * per, std::min(n, c * per + per)); });
}

}  // namespace fusor::cpu
