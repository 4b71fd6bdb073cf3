// Register-tiled small GEMM for the attention kernel's blocks: C[M,N] (+)= A[M,K] * B[K,N] with
// strided rows, N a multiple of the vector width. A is read by broadcasts, so it may be any
// strided view (Q rows straight from [B,S,H*D]); B rows are read as vectors (K^T packed, or V
// rows straight from [B,S,H*D] when the head dim fills whole vectors), and each vector column of
// B may lie anywhere (gemm_columns: the key columns of a paged cache's blocks). Blocks are small
// (at most a few hundred by a few hundred), so the packing and call overhead of a library GEMM
// would dominate; a 6x16 tile keeps 12 accumulators and 2 B vectors in AVX2's 16 registers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/simd.h"

namespace fusor::cpu::attention {

namespace hn = simd::hn;
using simd::D;
using simd::V;

// e^x for the softmax's x - max, so x <= 0, -inf or NaN: no overflow check. Below simd::kExpLo
// the result is 0, which also maps -inf to 0. NaN stays NaN.
inline V exp_nonpositive(V x) {
  const D d;
  const V lo = hn::Set(d, simd::kExpLo);
  const V y = hn::IfThenZeroElse(hn::Lt(x, lo), simd::exp_in_range(hn::Max(x, lo)));
  return hn::IfThenElse(hn::Not(hn::Eq(x, x)), x, y);
}

// dst[c * ldd + j] = src[j * lds + c] for j < rows, c < cols: a matrix transposed. 8x8
// tiles go through 256-bit registers (unpack, 64-bit unpack, 128-bit concat), on AVX-512 too:
// its wider vectors would need a 16x16 tile that head dims like 20 or 40 do not fill, and a
// scalar transpose (strided single-float stores) was most of the attention time when every
// decode step transposed its cached keys. The edges, and targets without 256-bit vectors, are
// scalar.
inline void transpose(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  using D8 = hn::CappedTag<float, 8>;
  using V8 = hn::Vec<D8>;
  const D8 d;
  int64_t r8 = 0, c8 = 0;
  if (hn::Lanes(d) == 8) {
    const hn::Repartition<double, D8> dd;
    r8 = rows / 8 * 8;
    c8 = cols / 8 * 8;
    for (int64_t j = 0; j < r8; j += 8) {
      for (int64_t c = 0; c < c8; c += 8) {
        V8 r[8], t[8], u[8];
        for (int i = 0; i < 8; ++i) r[i] = hn::LoadU(d, src + (j + i) * lds + c);
        for (int i = 0; i < 8; i += 2) {
          t[i] = hn::InterleaveLower(d, r[i], r[i + 1]);
          t[i + 1] = hn::InterleaveUpper(d, r[i], r[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {
          for (int h = 0; h < 2; ++h) {
            const auto a = hn::BitCast(dd, t[i + h]), b = hn::BitCast(dd, t[i + 2 + h]);
            u[i + 2 * h] = hn::BitCast(d, hn::InterleaveLower(dd, a, b));
            u[i + 2 * h + 1] = hn::BitCast(d, hn::InterleaveUpper(dd, a, b));
          }
        }
        // u[0..3] hold columns 0..3 (low half) and 4..7 (high half) of rows 0-3; u[4..7] of rows 4-7.
        for (int i = 0; i < 4; ++i) {
          hn::StoreU(hn::ConcatLowerLower(d, u[4 + i], u[i]), d, dst + (c + i) * ldd + j);
          hn::StoreU(hn::ConcatUpperUpper(d, u[4 + i], u[i]), d, dst + (c + 4 + i) * ldd + j);
        }
      }
    }
  }
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t c = j < r8 ? c8 : 0; c < cols; ++c) dst[c * ldd + j] = src[j * lds + c];
}

// B's vector column j starts at b[j] (row p at b[j] + p * ldb).
template <int MR, int NV>
inline void gemm_tile(const float* a, int64_t lda, const float* const* b, int64_t ldb, float* c, int64_t ldc, int64_t k,
                      bool accumulate) {
  const D d;
  const size_t L = hn::Lanes(d);
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) acc[r][j] = accumulate ? hn::LoadU(d, c + r * ldc + j * L) : hn::Zero(d);
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = hn::LoadU(d, b[j] + p * ldb);
    for (int r = 0; r < MR; ++r) {
      const V av = hn::Set(d, a[r * lda + p]);
      for (int j = 0; j < NV; ++j) acc[r][j] = hn::MulAdd(av, bv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) hn::StoreU(acc[r][j], d, c + r * ldc + j * L);
}

template <int NV>
inline void gemm_rows(int64_t m, const float* a, int64_t lda, const float* const* b, int64_t ldb, float* c, int64_t ldc,
                      int64_t k, bool accumulate) {
  int64_t i = 0;
  for (; i + 6 <= m; i += 6) gemm_tile<6, NV>(a + i * lda, lda, b, ldb, c + i * ldc, ldc, k, accumulate);
  switch (m - i) {
    case 5: gemm_tile<5, NV>(a + i * lda, lda, b, ldb, c + i * ldc, ldc, k, accumulate); break;
    case 4: gemm_tile<4, NV>(a + i * lda, lda, b, ldb, c + i * ldc, ldc, k, accumulate); break;
    case 3: gemm_tile<3, NV>(a + i * lda, lda, b, ldb, c + i * ldc, ldc, k, accumulate); break;
    case 2: gemm_tile<2, NV>(a + i * lda, lda, b, ldb, c + i * ldc, ldc, k, accumulate); break;
    case 1: gemm_tile<1, NV>(a + i * lda, lda, b, ldb, c + i * ldc, ldc, k, accumulate); break;
    default: break;
  }
}

// n must be a multiple of the vector width.
inline void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                 int64_t ldc, bool accumulate) {
  const int64_t L = static_cast<int64_t>(simd::lanes());
  int64_t j = 0;
  for (; j + 2 * L <= n; j += 2 * L) {
    const float* cols[2] = {b + j, b + j + L};
    gemm_rows<2>(m, a, lda, cols, ldb, c + j, ldc, k, accumulate);
  }
  if (j < n) {
    const float* col = b + j;
    gemm_rows<1>(m, a, lda, &col, ldb, c + j, ldc, k, accumulate);
  }
}

// The same with B's `vectors` vector columns at cols[0..vectors) (each with row stride ldb), and
// C's vector columns contiguous.
inline void gemm_columns(int64_t m, int64_t vectors, int64_t k, const float* a, int64_t lda, const float* const* cols,
                         int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const int64_t L = static_cast<int64_t>(simd::lanes());
  int64_t j = 0;
  // A decode token's few query heads against 4 key columns at once where registers allow
  // (AVX-512: 16 accumulators): the columns lie in 4 cache blocks, read as 4 streams, and
  // llama-tiny's 16-sequence decode attention ran ~12% faster than with 2. Same sums, same order.
  if (HWY_LANES(float) >= 16 && m <= 4)
    for (; j + 4 <= vectors; j += 4) gemm_rows<4>(m, a, lda, cols + j, ldb, c + j * L, ldc, k, accumulate);
  for (; j + 2 <= vectors; j += 2) gemm_rows<2>(m, a, lda, cols + j, ldb, c + j * L, ldc, k, accumulate);
  if (j < vectors) gemm_rows<1>(m, a, lda, cols + j, ldb, c + j * L, ldc, k, accumulate);
}

// One row of an online softmax (FlashAttention-style): `sr` holds the row's nk_pad masked,
// scaled scores of this key block and `vmax` their maximum. Updates the running max `m` and sum
// `l`, turns `sr` into exp(score - m) (all 0 when nothing is finite yet), and rescales the output
// accumulator row `acc` (dpad floats) by exp(m_old - m_new); `first` says this is the row's first
// block, whose accumulator is written afterwards rather than added to.
inline void fold_scores(float* sr, int64_t nk_pad, V vmax, float& m, float& l, float* acc, int64_t dpad, bool first) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float m_new = std::max(m, hn::GetLane(hn::MaxOfLanes(d, vmax)));
  if (m_new == -std::numeric_limits<float>::infinity()) {  // this block adds nothing (NaN at the end)
    std::fill(sr, sr + nk_pad, 0.f);
    return;
  }
  const float alpha = first ? 0.f : std::exp(m - m_new);
  m = m_new;
  const V vm = hn::Set(d, m_new);
  V vsum = hn::Zero(d);
  for (int64_t j = 0; j < nk_pad; j += L) {
    const V p = exp_nonpositive(hn::Sub(hn::LoadU(d, sr + j), vm));
    hn::StoreU(p, d, sr + j);
    vsum = hn::Add(vsum, p);
  }
  l = l * alpha + hn::GetLane(hn::SumOfLanes(d, vsum));
  if (!first && alpha != 1.f) {
    const V va = hn::Set(d, alpha);
    for (int64_t c = 0; c < dpad; c += L) hn::StoreU(hn::Mul(hn::LoadU(d, acc + c), va), d, acc + c);
  }
}

// Copies `rows` rows of `cols` floats (stride lds) into dst (stride ldd >= cols), zero-filling
// each row's tail: V rows for gemm() when the head size is not whole vectors.
inline void pack_rows(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t ldd) {
  for (int64_t j = 0; j < rows; ++j) {
    std::copy(src + j * lds, src + j * lds + cols, dst + j * ldd);
    std::fill(dst + j * ldd + cols, dst + (j + 1) * ldd, 0.f);
  }
}

}  // namespace fusor::cpu::attention
