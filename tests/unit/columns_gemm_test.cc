// The few-row GEMM on column-stored weights, on its own: every row count up to its limit (one to
// two vectors of rows, the padded rows must not leak into acc), column blocks and the single
// columns after them, K of 1 and odd, into a wider acc, against a double-precision loop.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/columns_gemm.h"

namespace fusor::cpu {
namespace {

std::vector<float> pattern(int64_t n, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 7919 + seed * 104729) % 97 - 48) / 48.f;
  return v;
}

TEST(ColumnsGemm, MatchesADoubleLoopForEveryRowCount) {
  for (int64_t m = 1; m <= columns_gemm_max_rows(); ++m)
    for (int64_t k : {1, 7, 64})
      for (int64_t cols : {1, 5, 13, 30}) {
        SCOPED_TRACE("m " + std::to_string(m) + " k " + std::to_string(k) + " cols " + std::to_string(cols));
        const auto x = pattern(m * k, 1), w = pattern(cols * k, 2);
        std::vector<float> xt(static_cast<size_t>(k * columns_gemm_max_rows()), 99.f);
        const int64_t padded = transpose_rows(x.data(), m, k, xt);
        ASSERT_GE(padded, m);
        const int64_t stride = cols + 3;  // acc is wider than the columns: the rest must stay
        std::vector<float> acc(static_cast<size_t>(m * stride), -7.f);
        columns_gemm(xt.data(), m, padded, k, w.data(), cols, acc.data(), stride);
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            double want = 0;
            for (int64_t i = 0; i < k; ++i) want += double{x[static_cast<size_t>(r * k + i)]} * w[static_cast<size_t>(c * k + i)];
            ASSERT_NEAR(acc[static_cast<size_t>(r * stride + c)], want, 1e-5 * (1 + std::abs(want))) << "row " << r << " column " << c;
          }
          for (int64_t c = cols; c < stride; ++c) ASSERT_EQ(acc[static_cast<size_t>(r * stride + c)], -7.f);
        }
      }
}

}  // namespace
}  // namespace fusor::cpu
