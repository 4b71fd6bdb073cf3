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

  // apply<true> on kRows x kVectors whole vectors at once: v[i][j] is row r + i, columns
  // [c + j * lanes, c + (j + 1) * lanes). Each eltwise op is dispatched once for all of them, so
  // their independent chains (GELU's erf: a dozen dependent FMAs) interleave.
  template <int kRows, int kVectors>
  void apply_block(simd::V (&v)[kRows][kVectors], int64_t r, int64_t c, const float* bias,
                   std::span<const float* const> binary) const {
    const int64_t L = static_cast<int64_t>(simd::lanes());
    const simd::D d;
    if (bias_)
      for (int j = 0; j < kVectors; ++j) {
        const simd::V b = simd::hn::LoadU(d, bias + c + j * L);
        for (int i = 0; i < kRows; ++i) v[i][j] = simd::hn::Add(v[i][j], b);
      }
    size_t next_binary = 0;
    for (const Step& s : steps_) {
      if (!s.add) {
        eltwise_all(s, &v[0][0], kRows * kVectors);
        continue;
      }
      const float* src = binary[next_binary++];
      for (int i = 0; i < kRows; ++i)
        for (int j = 0; j < kVectors; ++j)
          v[i][j] = simd::hn::Add(v[i][j], simd::hn::LoadU(d, src + (r + i) * s.row_stride + c + j * L));
    }
  }

 private:
  struct Step {  // one post-op
    bool add = false;  // a binary add, else an eltwise
    dnnl::algorithm alg = dnnl::algorithm::undef;
    float scale = 1.f, alpha = 0.f, beta = 0.f;
    int64_t row_stride = 0;  // a binary add's floats from one row to the next: 0 broadcasts one row
  };
  static simd::V eltwise(const Step& s, simd::V v);
  static void eltwise_all(const Step& s, simd::V* v, int n);  // eltwise on v[0..n)

  bool bias_ = false;
  std::vector<Step> steps_;
};

}  // namespace fusor::cpu
