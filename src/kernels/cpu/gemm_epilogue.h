// The epilogue of fusor's own GEMM loops (PackedGemv, PanelGemm): oneDNN's post-op chain of a
// matmul (bias, then eltwise ops and binary adds in order) applied to a vector of sums before
// the store, so that they replace the oneDNN primitive without changing what it computes.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/simd.h"

namespace fusor::cpu {

// `rows` dense rows of `cols` floats (one row may have any stride).
bool dense_rows(const dnnl::memory::desc& md, int64_t rows, int64_t cols);

class GemmEpilogue {
 public:
  // nullopt unless every post-op is an eltwise of relu (leaky), tanh, logistic, swish, gelu_erf,
  // gelu_tanh, hardswish or linear, or a binary add of one row of n floats (broadcast) or of
  // m dense rows.
  static std::optional<GemmEpilogue> make(const dnnl::post_ops& post_ops, int64_t m, int64_t n, bool has_bias);

  // The output for row r, columns [c, c + lanes) under `mask` (every lane when kFull), from its
  // sums `v`. `binary` holds one operand per binary post-op, in chain order; `bias` is ignored
  // without one. Inline: it runs once per vector of output.
  template <bool kFull = false>
  simd::V apply(simd::V v, int64_t r, int64_t c, simd::hn::Mask<simd::D> mask, const float* bias,
                std::span<const float* const> binary) const {
    const simd::D d;
    auto load = [&](const float* p) {
      if constexpr (kFull) return simd::hn::LoadU(d, p);
      else return simd::hn::MaskedLoad(mask, d, p);
    };
    if (bias_) v = simd::hn::Add(v, load(bias + c));
    size_t next_binary = 0;
    for (const Step& s : steps_)
      v = s.add ? simd::hn::Add(v, load(binary[next_binary++] + r * s.row_stride + c)) : eltwise(s, v);
    return v;
  }

 private:
  struct Step {  // one post-op
    bool add = false;  // a binary add, else an eltwise
    dnnl::algorithm alg = dnnl::algorithm::undef;
    float scale = 1.f, alpha = 0.f, beta = 0.f;
    int64_t row_stride = 0;  // a binary add's floats from one row to the next: 0 broadcasts one row
  };
  static simd::V eltwise(const Step& s, simd::V v);

  bool bias_ = false;
  std::vector<Step> steps_;
};

}  // namespace fusor::cpu
