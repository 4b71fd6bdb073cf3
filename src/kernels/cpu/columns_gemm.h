// A few rows of x times weights stored column by column ("ba": each output column's K weights
// contiguous, the layout oneDNN's gemm asks for on AVX2): the GEMM of a decode step with several
// sequences running (PackedGemv takes 2-16 rows here).
//
// x is transposed first (K x M, M padded to whole vectors: small, it stays in L1/L2), then each k
// loads the M rows' values as 1-2 vectors and broadcasts one weight of each of a few columns, an
// outer product into 12 accumulators. Every weight is read once for all rows, straight from the
// packed buffer, with no copy and no horizontal sums. Why: per-row dot products ran 4-8 rows
// 1.2-1.5x slower, and the pool's tiles of single-threaded oneDNN sgemm calls (which repack their
// share of the weights on every call) ran decode steps of 8 / 16 sequences 1.19x / 1.26x slower.
#pragma once
#include <cstdint>
#include <span>

namespace fusor::cpu {

// The most rows columns_gemm takes: two vectors of rows (PackedGemv's 16 on AVX2).
int64_t columns_gemm_max_rows();

// x (m dense rows of k floats) transposed for columns_gemm: xt[i * padded + r] = x[r][i], rows
// r >= m zero, where padded = m rounded up to a whole vector. Returns `padded`; xt needs
// k * padded floats.
int64_t transpose_rows(const float* x, int64_t m, int64_t k, std::span<float> xt);

// acc[r * acc_stride + c] = sum over i of x[r][i] * w[c * k + i], for r < m and c < cols, from xt
// as transpose_rows made it (`padded` floats per i).
void columns_gemm(const float* xt, int64_t m, int64_t padded, int64_t k, const float* w, int64_t cols, float* acc,
                  int64_t acc_stride);

}  // namespace fusor::cpu
