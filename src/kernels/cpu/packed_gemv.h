// A matmul of one row (a decoder's next token with one sequence running), or of up to 16 rows on
// the transposed layout below (a decode step of several sequences), read straight from oneDNN's packed weights, on
// fusor's thread pool, with OnednnMatmul's epilogue (bias, eltwise, binary add) applied before
// the store.
//
// Why: a few rows do a few FLOP per weight, so they run at memory speed. On llama-tiny's decode
// GEMMs (AVX-512, 2 threads, the same packed buffers) oneDNN 2.6's brgemm streamed ~18 GB/s and
// this loop ~21 GB/s: it walks each 64-column panel of the packed layout front to back, panels
// split among threads. It reads the layout brgemm asks for on AVX-512 ("BA16a64b": 64-column
// panels of K rows, K padded to 16; one row only, brgemm is faster from two), or the transposed
// one ("ba") oneDNN's gemm asks for on AVX2, where each column's K weights are one contiguous
// stream, read once for all rows: one row as dot products, 2-16 rows by columns_gemm.h. In a
// decode step of 8 or 16 sequences this ran 1.19x / 1.26x faster than the pool's tiles of
// single-threaded oneDNN calls, the same tokens (bench/generate_steps, docs/benchmarks.md). On
// AVX2 that gemm also runs an OpenMP team, which stalls at its barrier when a core is shared.
// The weights are not packed twice; another layout, more rows, or a post-op it does not know
// keep oneDNN.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace fusor::cpu {

class PackedGemv {
 public:
  // nullopt unless `src` is M dense rows of K floats (M = 1, or up to 8 on "ba"), `weights` one of
  // the two layouts above, `dst` M dense rows of N floats, and every post-op an eltwise of relu
  // (leaky), tanh, logistic, swish, gelu_erf, gelu_tanh, hardswish or linear, or a binary add of
  // one row of N floats (broadcast) or of M rows.
  static std::optional<PackedGemv> make(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                        const dnnl::memory::desc& dst, bool has_bias, const dnnl::post_ops& post_ops);

  // y = post_ops(x W + bias); `binary` holds one operand per binary post-op, in chain order.
  void execute(const float* x, const float* packed, const float* bias, float* y,
               std::span<const float* const> binary) const;

  struct Step {  // one post-op
    bool add = false;  // a binary add, else an eltwise
    dnnl::algorithm alg = dnnl::algorithm::undef;
    float scale = 1.f, alpha = 0.f, beta = 0.f;
    int64_t row_stride = 0;  // a binary add's floats from one row to the next: 0 broadcasts one row
  };

 private:
  int64_t m_ = 1, k_ = 0, n_ = 0, panel_stride_ = 0;  // floats from one panel to the next
  bool columns_ = false;                       // the transposed layout, not panels
  bool bias_ = false;
  std::vector<Step> steps_;
};

}  // namespace fusor::cpu
