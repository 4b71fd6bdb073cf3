// The GEMM on weights packed into panels by fusor (what runs many rows where oneDNN's matmul is
// its sgemm): every row count around its 4-row step and its 128-row tiles, K in one block and
// several (uneven), partial last panels, transposed weights (Gemm's transB), bias, each eltwise
// post-op and a residual of one row or of every row, against a double-precision loop; packing
// shared by content; and what it declines.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/panel_gemm.h"
#include "kernels/cpu/thread_pool.h"
#include "gemm_reference.h"

namespace fusor::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;

memory::desc rows(int64_t m, int64_t n) { return memory::desc({m, n}, memory::data_type::f32, memory::format_tag::ab); }

// An M x K by K x N GEMM with a bias and one activation, on patterned data.
struct PatternGemm {
  std::vector<float> w, x, bias;
  std::optional<PanelGemm> gemm;
};
PatternGemm pattern_gemm(int64_t m, int64_t k, int64_t n, algorithm activation) {
  PatternGemm g{test::pattern(k * n, 0.2f, 1), test::pattern(m * k, 1.f, 2), test::pattern(n, 0.5f, 3), {}};
  dnnl::post_ops post_ops;
  post_ops.append_eltwise(1.f, activation, 0.f, 0.f);
  g.gemm = PanelGemm::make(rows(m, k), rows(k, n), g.w.data(), rows(m, n), true, post_ops);
  return g;
}

struct Case {
  int64_t m, k, n;
  algorithm act = algorithm::undef;  // undef: none
  float alpha = 0.f, beta = 0.f;
  bool bias = false, residual = false, row_residual = false;
  bool transposed = false;  // weights stored N x K (each column's K values contiguous)
};

void check(const Case& c) {
  SCOPED_TRACE("M " + std::to_string(c.m) + " K " + std::to_string(c.k) + " N " + std::to_string(c.n) + " act " +
               std::to_string(static_cast<int>(c.act)) + (c.transposed ? " transposed" : ""));
  const int64_t res_rows = c.row_residual ? c.m : 1;
  const auto w = test::pattern(c.k * c.n, 0.2f, 1), x = test::pattern(c.m * c.k, 1.f, 2),
             bias = test::pattern(c.n, 0.5f, 3), res = test::pattern(res_rows * c.n, 2.f, 4);
  // w holds W[i][j] at i * n + j, or at j * k + i when transposed.
  const memory::desc w_md({c.k, c.n}, memory::data_type::f32, c.transposed ? memory::dims{1, c.k} : memory::dims{c.n, 1});
  dnnl::post_ops po;
  if (c.act != algorithm::undef) po.append_eltwise(1.f, c.act, c.alpha, c.beta);
  if (c.residual) po.append_binary(algorithm::binary_add, rows(res_rows, c.n));
  const auto gemm = PanelGemm::make(rows(c.m, c.k), w_md, w.data(), rows(c.m, c.n), c.bias, po);
  ASSERT_TRUE(gemm.has_value());
  std::vector<float> y(static_cast<size_t>(c.m * c.n) + 1, -7.f);  // one float past the end: must stay
  const float* binary[] = {res.data()};
  gemm->execute(x.data(), c.bias ? bias.data() : nullptr, y.data(),
                std::span<const float* const>(binary, c.residual ? 1 : 0), c.m);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double acc = c.bias ? bias[static_cast<size_t>(j)] : 0.0;
      for (int64_t r = 0; r < c.k; ++r)
        acc += double{x[static_cast<size_t>(i * c.k + r)]} *
               w[static_cast<size_t>(c.transposed ? j * c.k + r : r * c.n + j)];
      if (c.act != algorithm::undef) acc = test::eltwise(c.act, acc, c.alpha, c.beta);
      if (c.residual) acc += res[static_cast<size_t>((c.row_residual ? i : 0) * c.n + j)];
      ASSERT_NEAR(y[static_cast<size_t>(i * c.n + j)], acc, 1e-5 * (1 + std::abs(acc))) << "row " << i << " column " << j;
    }
  EXPECT_EQ(y.back(), -7.f);
}

TEST(PanelGemm, MatchesADoubleLoopOnEveryRowAndColumn) {
  for (int64_t m : {1, 3, 4, 5, 17, 32})
    for (int64_t n : {1, 23, 24, 25, 100}) check({.m = m, .k = 37, .n = n});
  // Tiles of 128 rows: a full one and a partial one, 4-row steps and the 1-3 rows after them.
  for (int64_t m : {128, 130, 259}) check({.m = m, .k = 64, .n = 50});
}

// K in one block (up to 384) and in several of equal size: the sums carry across blocks in y.
TEST(PanelGemm, CarriesSumsAcrossKBlocks) {
  for (int64_t k : {1, 384, 385, 1000, 1536}) check({.m = 9, .k = k, .n = 30, .bias = true, .residual = true});
}

TEST(PanelGemm, ReadsTransposedWeights) {
  for (int64_t n : {7, 48, 70}) check({.m = 21, .k = 45, .n = n, .transposed = true});
}

TEST(PanelGemm, AppliesBiasEachActivationAndAResidual) {
  for (auto [act, alpha, beta] : test::epilogue_activations())
    for (bool row_residual : {false, true})
      check({.m = 19, .k = 77, .n = 53, .act = act, .alpha = alpha, .beta = beta, .bias = true, .residual = true,
             .row_residual = row_residual});
}

TEST(PanelGemm, RunsOnAnyThreadWidth) {
  const int before = thread_width();
  for (int width : {1, 2, 3}) {
    set_thread_width(width);
    check({.m = 32, .k = 384, .n = 1536, .act = algorithm::eltwise_gelu_erf, .bias = true});
    check({.m = 300, .k = 96, .n = 200, .residual = true, .row_residual = true});
  }
  set_thread_width(before);
}

// Plans for other row counts pack the same weights: one buffer serves them all.
TEST(PanelGemm, SharesPackedWeightsByContent) {
  const auto w = test::pattern(64 * 80, 0.2f, 5);
  const std::vector<float> copy = w;  // another address, equal bytes
  const memory::desc w_md = rows(64, 80);
  const auto a = PanelGemm::make(rows(20, 64), w_md, w.data(), rows(20, 80), false, {});
  const size_t hits = derived_weight_cache_stats().hits;
  const auto b = PanelGemm::make(rows(200, 64), w_md, copy.data(), rows(200, 80), false, {});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(derived_weight_cache_stats().hits, hits + 1);
  EXPECT_GE(a->packed_bytes(), w.size() * sizeof(float));
}

// A plan after another packs nothing from the same buffer; a buffer changed in place since (or
// another at a freed one's address) packs anew, so the address alone is never trusted. Both
// plain (rows) and transposed (columns) weights.
TEST(PanelGemm, ASecondPlanOnTheSameBufferPacksNothingUnlessItChanged) {
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "transposed weights" : "plain weights");
    auto w = test::pattern(64 * 80, 0.2f, 6);
    const memory::desc w_md = transposed ? memory::desc({64, 80}, memory::data_type::f32, memory::dims{1, 64}) : rows(64, 80);
    const auto x = test::pattern(20 * 64, 1.f, 7);
    const auto first = PanelGemm::make(rows(20, 64), w_md, w.data(), rows(20, 80), false, {});
    const auto before = derived_weight_cache_stats();
    const auto second = PanelGemm::make(rows(20, 64), w_md, w.data(), rows(20, 80), false, {});
    const auto after = derived_weight_cache_stats();
    ASSERT_TRUE(first && second);
    EXPECT_EQ(after.packs, before.packs);
    EXPECT_EQ(after.hits, before.hits + 1);
    w[77] += 1.f;  // row 0, column 77 plain; row 13, column 1 transposed
    const auto third = PanelGemm::make(rows(20, 64), w_md, w.data(), rows(20, 80), false, {});
    ASSERT_TRUE(third);
    EXPECT_EQ(derived_weight_cache_stats().packs, after.packs + 1);
    std::vector<float> y1(20 * 80), y3(20 * 80);
    first->execute(x.data(), nullptr, y1.data(), {}, 20);
    third->execute(x.data(), nullptr, y3.data(), {}, 20);
    const size_t changed = transposed ? 1 : 77;  // the changed weight's output column
    EXPECT_NE(y1[changed], y3[changed]);
    EXPECT_EQ(y1[changed == 1 ? 2 : 1], y3[changed == 1 ? 2 : 1]);
  }
}

// Outputs side by side: every panel stored straight into its output, or through a tile of its
// own when it holds two outputs' columns, gives the wide result's columns bit for bit; nothing is
// written past an output.
TEST(PanelGemm, StoresEachPanelIntoItsSplit) {
  const int64_t panel = 3 * static_cast<int64_t>(HWY_LANES(float));
  const std::vector<std::vector<int64_t>> layouts = {
      {2 * panel, panel, 11},              // MiniLM's kind: every output starts on a panel
      {panel + 8, 16, 2 * panel - 8},      // llama's kind: outputs across panels, on vectors
      {5, panel - 3, 1, 7, panel + 9}};    // any widths
  for (const auto& widths : layouts)
    for (int64_t m : {1, 19, 130}) {
      int64_t n = 0;
      for (int64_t w : widths) n += w;
      SCOPED_TRACE("M " + std::to_string(m) + " N " + std::to_string(n));
      const auto [w, x, bias, gemm] = pattern_gemm(m, 40, n, algorithm::eltwise_relu);
      ASSERT_TRUE(gemm.has_value());
      std::vector<float> wide(static_cast<size_t>(m * n));
      gemm->execute(x.data(), bias.data(), wide.data(), {}, m);
      std::vector<std::vector<float>> parts;
      std::vector<ColumnSplit> splits;
      int64_t begin = 0;
      for (int64_t width : widths) {
        parts.emplace_back(static_cast<size_t>(m * width) + 1, -7.f);  // one float past the end: must stay
        splits.push_back({begin, parts.back().data(), width});
        begin += width;
      }
      gemm->execute_split(x.data(), bias.data(), splits, {}, m);
      for (size_t s = 0; s < parts.size(); ++s) {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < widths[s]; ++j)
            ASSERT_EQ(parts[s][static_cast<size_t>(i * widths[s] + j)],
                      wide[static_cast<size_t>(i * n + splits[s].begin + j)])
                << "output " << s << " row " << i << " column " << j;
        EXPECT_EQ(parts[s].back(), -7.f) << "output " << s;
      }
    }
}

// A packed plan's filler (Kernel::set_live_rows): the live rows are the full GEMM's, bit for bit,
// and every row past them is zero, not what the output held before, in one output or several.
TEST(PanelGemm, StoresZerosPastTheLiveRows) {
  const int64_t m = 137, k = 40, n = 3 * 3 * static_cast<int64_t>(HWY_LANES(float)) + 5;
  const auto [w, x, bias, gemm] = pattern_gemm(m, k, n, algorithm::eltwise_gelu_erf);
  ASSERT_TRUE(gemm.has_value());
  std::vector<float> full(static_cast<size_t>(m * n));
  gemm->execute(x.data(), bias.data(), full.data(), {}, m);
  for (int64_t live : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{128}, int64_t{136}}) {
    SCOPED_TRACE("live rows " + std::to_string(live));
    std::vector<float> y(static_cast<size_t>(m * n) + 1, -7.f), left(static_cast<size_t>(m * 10) + 1, -7.f),
        right(static_cast<size_t>(m * (n - 10)) + 1, -7.f);
    gemm->execute(x.data(), bias.data(), y.data(), {}, live);
    const ColumnSplit splits[] = {{0, left.data(), 10}, {10, right.data(), n - 10}};
    gemm->execute_split(x.data(), bias.data(), splits, {}, live);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float want = i < live ? full[static_cast<size_t>(i * n + j)] : 0.f;
        ASSERT_EQ(y[static_cast<size_t>(i * n + j)], want) << "row " << i << " column " << j;
        const float split = j < 10 ? left[static_cast<size_t>(i * 10 + j)] : right[static_cast<size_t>(i * (n - 10) + j - 10)];
        ASSERT_EQ(split, want) << "split, row " << i << " column " << j;
      }
    EXPECT_EQ(y.back(), -7.f);
    EXPECT_EQ(left.back(), -7.f);
    EXPECT_EQ(right.back(), -7.f);
  }
}

TEST(PanelGemm, DeclinesWhatItCannotRun) {
  const auto w = test::pattern(64 * 64, 0.2f, 1);
  const dnnl::post_ops none;
  EXPECT_FALSE(PanelGemm::make(rows(20, 64), rows(64, 64), nullptr, rows(20, 64), false, none)) << "runtime weights";
  EXPECT_FALSE(PanelGemm::make(rows(20, 64), memory::desc({64, 64}, memory::data_type::f32, memory::format_tag::BA16a64b),
                               w.data(), rows(20, 64), false, none))
      << "blocked weights";
  EXPECT_FALSE(PanelGemm::make(memory::desc({20, 64}, memory::data_type::f32, memory::dims{128, 1}), rows(64, 64),
                               w.data(), rows(20, 64), false, none))
      << "rows of x with a gap between them";
  dnnl::post_ops exp;
  exp.append_eltwise(1.f, algorithm::eltwise_exp, 0.f, 0.f);
  EXPECT_FALSE(PanelGemm::make(rows(20, 64), rows(64, 64), w.data(), rows(20, 64), false, exp))
      << "an eltwise it does not know";
  dnnl::post_ops mul;
  mul.append_binary(algorithm::binary_mul, rows(1, 64));
  EXPECT_FALSE(PanelGemm::make(rows(20, 64), rows(64, 64), w.data(), rows(20, 64), false, mul)) << "a binary other than add";
}

}  // namespace
}  // namespace fusor::cpu
