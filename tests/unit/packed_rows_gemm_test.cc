// The few-row GEMM over oneDNN's 64-column panel layout: every row and column (a partial last
// panel, K not a multiple of the 4 streams, K below 4), bias, each eltwise post-op as oneDNN
// defines it and a residual of whole rows, outputs split side by side (a split inside a vector
// too), filler rows zeroed, against a double-precision loop; and it declines what it cannot run.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/packed_rows_gemm.h"
#include "kernels/cpu/thread_pool.h"
#include "gemm_reference.h"

namespace fusor::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using test::eltwise;
using test::pattern;

using test::panels;
using test::rows;

struct Case {
  int64_t m, k, n;
  algorithm act = algorithm::undef;  // undef: none
  float alpha = 0, beta = 0;
  bool bias = false, residual = false;
  std::vector<int64_t> splits = {};  // the outputs' first columns after 0; none: one output
  int64_t live = -1;                 // rows computed; -1: all
};

void check(const Case& c) {
  SCOPED_TRACE("M " + std::to_string(c.m) + " K " + std::to_string(c.k) + " N " + std::to_string(c.n) + " act " +
               std::to_string(static_cast<int>(c.act)) + " splits " + std::to_string(c.splits.size()) + " live " +
               std::to_string(c.live));
  const auto w = pattern(c.k * c.n, 0.2f, 1), x = pattern(c.m * c.k, 1.f, 2), bias = pattern(c.n, 0.5f, 3),
             res = pattern(c.m * c.n, 2.f, 4);
  auto& eng = onednn::engine();
  memory plain(rows(c.k, c.n), eng, const_cast<float*>(w.data()));
  memory packed(panels(c.k, c.n), eng);
  onednn::execute_reorder(dnnl::reorder(plain, packed), plain, packed);

  dnnl::post_ops po;
  if (c.act != algorithm::undef) po.append_eltwise(1.f, c.act, c.alpha, c.beta);
  if (c.residual) po.append_binary(algorithm::binary_add, rows(c.m, c.n));
  const auto gemm = PackedRowsGemm::make(rows(c.m, c.k), packed.get_desc(), rows(c.m, c.n), c.bias, po);
  ASSERT_TRUE(gemm.has_value());

  // Each output its own buffer with one float past its end, which must stay.
  std::vector<int64_t> begins = {0};
  begins.insert(begins.end(), c.splits.begin(), c.splits.end());
  std::vector<std::vector<float>> outs;
  std::vector<ColumnSplit> splits;
  for (size_t o = 0; o < begins.size(); ++o) {
    const int64_t cols = (o + 1 < begins.size() ? begins[o + 1] : c.n) - begins[o];
    outs.emplace_back(static_cast<size_t>(c.m * cols) + 1, -7.f);
  }
  for (size_t o = 0; o < begins.size(); ++o)
    splits.push_back({begins[o], outs[o].data(), (o + 1 < begins.size() ? begins[o + 1] : c.n) - begins[o]});
  const float* binary[] = {res.data()};
  const auto ops = std::span<const float* const>(binary, c.residual ? 1 : 0);
  const float* weights = static_cast<const float*>(packed.get_data_handle());
  const int64_t live = c.live < 0 ? c.m : c.live;
  if (splits.size() == 1) gemm->execute(x.data(), weights, c.bias ? bias.data() : nullptr, outs[0].data(), ops, live);
  else gemm->execute_split(x.data(), weights, c.bias ? bias.data() : nullptr, splits, ops, live);

  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      size_t o = begins.size() - 1;
      while (begins[o] > j) --o;
      const float got = outs[o][static_cast<size_t>(i * splits[o].ld + j - begins[o])];
      if (i >= live) {
        ASSERT_EQ(got, 0.f) << "filler row " << i << " column " << j;
        continue;
      }
      double acc = c.bias ? bias[static_cast<size_t>(j)] : 0.0;
      for (int64_t r = 0; r < c.k; ++r)
        acc += double{x[static_cast<size_t>(i * c.k + r)]} * w[static_cast<size_t>(r * c.n + j)];
      if (c.act != algorithm::undef) acc = eltwise(c.act, acc, c.alpha, c.beta);
      if (c.residual) acc += res[static_cast<size_t>(i * c.n + j)];
      ASSERT_NEAR(got, acc, 1e-5 * (1 + std::abs(acc))) << "row " << i << " column " << j;
    }
  for (const auto& out : outs) EXPECT_EQ(out.back(), -7.f);
}

TEST(PackedRowsGemm, MatchesADoubleLoopOnEveryRowAndColumn) {
  for (int64_t m : {2, 5, 6, 7, 16, 48})
    for (int64_t k : {1, 3, 5, 37, 512})
      for (int64_t n : {1, 64, 100, 130}) check({m, k, n});
  check({16, 1376, 512});
}

TEST(PackedRowsGemm, AppliesBiasEachActivationAndAResidual) {
  for (auto [act, alpha, beta] : test::epilogue_activations()) check({7, 77, 200, act, alpha, beta, true, true});
}

TEST(PackedRowsGemm, StoresSplitOutputsInPlace) {
  check({16, 512, 768, algorithm::undef, 0, 0, true, false, {512, 640}});  // llama's Q, K and V
  check({16, 512, 2752, algorithm::undef, 0, 0, false, false, {1376}});    // gate and up: a panel across both
  check({5, 40, 100, algorithm::undef, 0, 0, true, false, {3, 70}});        // splits inside a vector
}

TEST(PackedRowsGemm, ZeroesFillerRowsWithoutComputingThem) {
  check({16, 64, 130, algorithm::undef, 0, 0, true, true, {}, 9});
  check({16, 64, 130, algorithm::undef, 0, 0, false, false, {64}, 0});
}

TEST(PackedRowsGemm, RunsOnAnyThreadWidth) {
  const int before = thread_width();
  for (int width : {1, 2, 3}) {
    set_thread_width(width);
    check({16, 512, 1376, algorithm::eltwise_swish, 1.f, 0.f, true, false});
    check({3, 64, 64});  // one panel: fewer panels than threads
  }
  set_thread_width(before);
}

TEST(PackedRowsGemm, DeclinesWhatItCannotRun) {
  dnnl::post_ops none;
  EXPECT_FALSE(PackedRowsGemm::make(rows(2, 64), rows(64, 64), rows(2, 64), false, none)) << "plain weights";
  EXPECT_FALSE(PackedRowsGemm::make(rows(1, 64), panels(64, 64), rows(1, 64), false, none)) << "one row (PackedGemv's)";
  const int64_t over = PackedRowsGemm::kMaxRows + 1;
  EXPECT_FALSE(PackedRowsGemm::make(rows(over, 64), panels(64, 64), rows(over, 64), false, none)) << "too many rows";
  dnnl::post_ops exp;
  exp.append_eltwise(1.f, algorithm::eltwise_exp, 0.f, 0.f);
  EXPECT_FALSE(PackedRowsGemm::make(rows(2, 64), panels(64, 64), rows(2, 64), false, exp)) << "an eltwise it does not know";
}

}  // namespace
}  // namespace fusor::cpu
