// Register-tiled small GEMM for the attention kernel's blocks: C[M,N] (+)= A[M,K] * B[K,N] with
// strided rows, N a multiple of the vector width. A is read by broadcasts, so it may be any
// strided view (Q rows straight from [B,S,H*D]); B rows are read as vectors (K^T packed, or V
// rows straight from [B,S,H*D] when the head dim fills whole vectors). Blocks are small (at most
// a few hundred by a few hundred), so the packing and call overhead of a library GEMM would
// dominate; a 6x16 tile keeps 12 accumulators and 2 B vectors in AVX2's 16 registers.
#pragma once
#include <cstdint>

#include "kernels/cpu/simd.h"

namespace fusor::cpu::attention {

namespace hn = simd::hn;
using simd::D;
using simd::V;

template <int MR, int NV>
inline void gemm_tile(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t k,
                      bool accumulate) {
  const D d;
  const size_t L = hn::Lanes(d);
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) acc[r][j] = accumulate ? hn::LoadU(d, c + r * ldc + j * L) : hn::Zero(d);
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = hn::LoadU(d, b + p * ldb + j * L);
    for (int r = 0; r < MR; ++r) {
      const V av = hn::Set(d, a[r * lda + p]);
      for (int j = 0; j < NV; ++j) acc[r][j] = hn::MulAdd(av, bv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NV; ++j) hn::StoreU(acc[r][j], d, c + r * ldc + j * L);
}

template <int NV>
inline void gemm_rows(int64_t m, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
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
  for (; j + 2 * L <= n; j += 2 * L) gemm_rows<2>(m, a, lda, b + j, ldb, c + j, ldc, k, accumulate);
  if (j < n) gemm_rows<1>(m, a, lda, b + j, ldb, c + j, ldc, k, accumulate);
}

}  // namespace fusor::cpu::attention
