// The attention kernels' building blocks (kernels/cpu/attention_blocks.h) against plain loops:
// the K^T transpose over whole 8x8 register tiles, their edges and strided rows; the small GEMM
// on B's vector columns scattered in memory (the key columns of paged cache blocks).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/attention_blocks.h"

namespace fusor {
namespace {

// Every shape the kernels give it: head dims 20, 32, 64 and 128, cache blocks and tiles of keys
// that are and are not whole tiles, one key (a decode step).
TEST(AttentionBlocks, TransposeMatchesThePlainLoopForEveryShape) {
  for (int64_t rows : {1, 3, 8, 13, 16, 40, 128})
    for (int64_t cols : {1, 7, 8, 20, 32, 64, 128}) {
      const int64_t lds = cols + 5, ldd = rows + 11;  // strided: the tile's padding columns stay
      std::vector<float> src(static_cast<size_t>(rows * lds));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f - 7.f;
      std::vector<float> dst(static_cast<size_t>(cols * ldd), -1.f);
      cpu::attention::transpose(src.data(), lds, rows, cols, dst.data(), ldd);
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t j = 0; j < ldd; ++j) {
          const float want = j < rows ? src[static_cast<size_t>(j * lds + c)] : -1.f;
          ASSERT_EQ(dst[static_cast<size_t>(c * ldd + j)], want) << rows << "x" << cols << " at " << c << "," << j;
        }
    }
}

// C = A B over every row count of the register tiles (1-7 and past 6), odd and even numbers of
// vector columns, each column from its own place (as the cached attention's key blocks lie in
// the pool), then accumulated onto.
TEST(AttentionBlocks, GemmColumnsMatchesThePlainLoopOnScatteredColumns) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes()), k = 24, ldb = 2 * L, lda = k + 3;
  for (int64_t m : {1, 2, 4, 5, 6, 7, 13})
    for (int64_t vectors : {1, 2, 3, 5}) {
      // Column v lives in block (vectors - 1 - v) of a pool, at lane offset L in its rows.
      std::vector<float> pool(static_cast<size_t>(vectors * k * ldb));
      for (size_t i = 0; i < pool.size(); ++i) pool[i] = std::sin(static_cast<float>(i)) * 2.f;
      std::vector<const float*> cols;
      for (int64_t v = 0; v < vectors; ++v) cols.push_back(pool.data() + (vectors - 1 - v) * k * ldb + L);
      std::vector<float> a(static_cast<size_t>(m * lda));
      for (size_t i = 0; i < a.size(); ++i) a[i] = std::cos(static_cast<float>(i)) - 0.25f;
      const int64_t n = vectors * L, ldc = n + 5;
      std::vector<float> c(static_cast<size_t>(m * ldc), 1.5f);
      for (bool accumulate : {false, true}) {
        std::vector<float> before = c;
        cpu::attention::gemm_columns(m, vectors, k, a.data(), lda, cols.data(), ldb, c.data(), ldc, accumulate);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = accumulate ? before[static_cast<size_t>(i * ldc + j)] : 0.0;
            for (int64_t p = 0; p < k; ++p)
              want += double{a[static_cast<size_t>(i * lda + p)]} * cols[static_cast<size_t>(j / L)][p * ldb + j % L];
            ASSERT_NEAR(c[static_cast<size_t>(i * ldc + j)], want, 1e-4 * (1 + std::abs(want)))
                << "m " << m << " vectors " << vectors << " accumulate " << accumulate << " at " << i << "," << j;
          }
        for (int64_t i = 0; i < m; ++i)  // the padding past n is not written
          for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], before[static_cast<size_t>(i * ldc + j)]);
      }
    }
}

}  // namespace
}  // namespace fusor
