// A one-row matmul (M = 1: a decoder's next token with one sequence running) read straight from
// oneDNN's packed weights, on fusor's thread pool, with OnednnMatmul's epilogue (bias, eltwise,
// binary add) applied before the store.
//
// Why: one row does 2 FLOP per weight, so it runs at memory speed. On llama-tiny's decode GEMMs
// (AVX-512, 2 threads, the same packed buffers) oneDNN 2.6's brgemm streamed ~18 GB/s and this
// loop ~21 GB/s: it walks each 64-column panel of the packed layout front to back, panels split
// among threads. It reads the layout brgemm asks for on AVX-512 ("BA16a64b": 64-column panels of
// K rows, K padded to 16), or the transposed one ("ba") oneDNN's gemm asks for on AVX2, where
// it streams each column's K weights as a dot product. The weights are not packed twice; another
// layout, more rows, or a post-op it does not know keep oneDNN. On AVX2 that gemm also runs an
// OpenMP team, which stalls at its barrier when a core is shared.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace fusor::cpu {

class PackedGemv {
 public:
  // nullopt unless `src` is one dense row of K floats, `weights` one of the two layouts above,
  // `dst` one dense row of N floats, and every post-op an eltwise of relu (leaky), tanh, logistic,
  // swish, gelu_erf, gelu_tanh, hardswish or linear, or a binary add of one row of N floats.
  static std::optional<PackedGemv> make(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                        const dnnl::memory::desc& dst, bool has_bias, const dnnl::post_ops& post_ops);

  // y = post_ops(x W + bias); `binary` holds one row per binary post-op, in chain order.
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
