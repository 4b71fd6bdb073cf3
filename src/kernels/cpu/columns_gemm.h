// A few rows of x times weights stored column by column ("ba": each output column's K weights
// contiguous, the layout oneDNN's gemm asks for on AVX2): the GEMM of a decode step with 2 to a
// few dozen sequences running.
//
// Why: oneDNN 2.6's jit sgemm repacks its weights on every call and ran llama-tiny's 16-row decode
// GEMMs at ~40 GFLOP/s, against ~66 for large ones. Here x is transposed first (K x M, M padded
// to whole vectors: small, it stays in L1/L2), then each k loads the M rows' values as 1-4
// vectors and broadcasts one weight of each of a few columns, an outer product into 12
// accumulators. Every weight is read once for all rows, straight from the packed buffer, with
// no copy.
#pragma once
#include <cstdint>
#include <span>

namespace fusor::cpu {

// The most rows columns_gemm takes: four vectors of rows.
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
