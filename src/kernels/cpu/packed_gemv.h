// A matmul of one row (a decoder's next token with one sequence running), read straight from
// oneDNN's packed weights, on fusor's thread pool, with OnednnMatmul's epilogue (bias, eltwise,
// binary add) applied before the store.
//
// Why: one row does 2 FLOP per weight, so it runs at memory speed. On llama-tiny's decode GEMMs
// (AVX-512, 2 threads, the same packed buffers) oneDNN 2.6's brgemm streamed ~18 GB/s and this
// loop ~21 GB/s: it walks each 64-column panel of the packed layout front to back, panels split
// among threads. It reads the layout brgemm asks for on AVX-512 ("BA16a64b": 64-column panels of
// K rows, K padded to 16; brgemm is faster from two rows), or the transposed one ("ba") oneDNN's
// gemm asks for on AVX2, where each column's K weights are one contiguous stream, as dot
// products: 1.1-1.8x the panels of panel_gemm.h at one row, which take two rows and more there.
// The weights are not packed twice; another layout, more rows, or a post-op it does not know
// keep oneDNN.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <span>

#include "kernels/cpu/gemm_epilogue.h"

namespace fusor::cpu {

class PackedGemv {
 public:
  // nullopt unless `src` is one row of K floats, `weights` one of the two layouts above, `dst` one
  // row of N floats, and the post-ops are GemmEpilogue's.
  static std::optional<PackedGemv> make(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                        const dnnl::memory::desc& dst, bool has_bias, const dnnl::post_ops& post_ops);

  // y = post_ops(x W + bias); `binary` holds one operand per binary post-op, in chain order.
  void execute(const float* x, const float* packed, const float* bias, float* y,
               std::span<const float* const> binary) const;

 private:
  int64_t k_ = 0, n_ = 0, panel_stride_ = 0;  // floats from one panel to the next
  bool columns_ = false;                       // the transposed layout, not panels
  GemmEpilogue epilogue_;
};

}  // namespace fusor::cpu
