// The one-row GEMV over oneDNN's 64-column panel layout and the few-row GEMM over the transposed
// layout ("ba"):
// every column (a partial last panel, K not a multiple of 16 or of the vector), bias, each eltwise
// post-op as oneDNN defines it and a residual row, against a double-precision loop; and it
// declines what it cannot run exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/packed_gemv.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;

memory::desc rows(int64_t m, int64_t n) { return memory::desc({m, n}, memory::data_type::f32, memory::format_tag::ab); }
memory::desc row(int64_t n) { return rows(1, n); }
memory::desc panels(int64_t k, int64_t n) {
  return memory::desc({k, n}, memory::data_type::f32, memory::format_tag::BA16a64b);
}
// Both layouts it reads: brgemm's panels (AVX-512) and gemm's transposed weights (AVX2).
constexpr memory::format_tag kLayouts[] = {memory::format_tag::BA16a64b, memory::format_tag::ba};

std::vector<float> pattern(int64_t n, float scale, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * static_cast<float>(static_cast<int>((i * 7919 + seed * 104729) % 97) - 48) / 48.f;
  return v;
}

double eltwise(algorithm alg, double x, double alpha, double beta) {
  switch (alg) {
    case algorithm::eltwise_relu: return x > 0 ? x : alpha * x;
    case algorithm::eltwise_tanh: return std::tanh(x);
    case algorithm::eltwise_logistic: return 1 / (1 + std::exp(-x));
    case algorithm::eltwise_swish: return x / (1 + std::exp(-alpha * x));
    case algorithm::eltwise_gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case algorithm::eltwise_gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case algorithm::eltwise_hardswish: return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
    default: return alpha * x + beta;  // linear
  }
}

struct Case {
  int64_t k, n;
  algorithm act;  // undef: none
  float alpha, beta;
  bool bias, residual;
  memory::format_tag layout = memory::format_tag::BA16a64b;
  int64_t m = 1;                // rows of x (more than one: the transposed layout only)
  bool row_residual = false;    // the residual has m rows, else one row broadcast
};

void check(const Case& c) {
  SCOPED_TRACE("K " + std::to_string(c.k) + " N " + std::to_string(c.n) + " act " + std::to_string(static_cast<int>(c.act)) +
               (c.layout == memory::format_tag::ba ? " ba" : " panels"));
  const int64_t res_rows = c.row_residual ? c.m : 1;
  const auto w = pattern(c.k * c.n, 0.2f, 1), x = pattern(c.m * c.k, 1.f, 2), bias = pattern(c.n, 0.5f, 3),
             res = pattern(res_rows * c.n, 2.f, 4);
  auto& eng = onednn::engine();
  memory plain(memory::desc({c.k, c.n}, memory::data_type::f32, memory::format_tag::ab), eng,
               const_cast<float*>(w.data()));
  memory packed(memory::desc({c.k, c.n}, memory::data_type::f32, c.layout), eng);
  onednn::execute_reorder(dnnl::reorder(plain, packed), plain, packed);

  dnnl::post_ops po;
  if (c.act != algorithm::undef) po.append_eltwise(1.f, c.act, c.alpha, c.beta);
  if (c.residual) po.append_binary(algorithm::binary_add, rows(res_rows, c.n));
  const auto gemv = PackedGemv::make(rows(c.m, c.k), packed.get_desc(), rows(c.m, c.n), c.bias, po);
  ASSERT_TRUE(gemv.has_value());
  std::vector<float> y(static_cast<size_t>(c.m * c.n) + 1, -7.f);  // one float past the end: must stay
  const float* binary[] = {res.data()};
  gemv->execute(x.data(), static_cast<const float*>(packed.get_data_handle()), c.bias ? bias.data() : nullptr,
                y.data(), std::span<const float* const>(binary, c.residual ? 1 : 0));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double acc = c.bias ? bias[static_cast<size_t>(j)] : 0.0;
      for (int64_t r = 0; r < c.k; ++r)
        acc += double{x[static_cast<size_t>(i * c.k + r)]} * w[static_cast<size_t>(r * c.n + j)];
      if (c.act != algorithm::undef) acc = eltwise(c.act, acc, c.alpha, c.beta);
      if (c.residual) acc += res[static_cast<size_t>((c.row_residual ? i : 0) * c.n + j)];
      ASSERT_NEAR(y[static_cast<size_t>(i * c.n + j)], acc, 1e-5 * (1 + std::abs(acc))) << "row " << i << " column " << j;
    }
  EXPECT_EQ(y.back(), -7.f);
}

TEST(PackedGemv, MatchesADoubleLoopOnEveryColumn) {
  for (memory::format_tag layout : kLayouts)
    for (int64_t k : {1, 5, 16, 37, 512})
      for (int64_t n : {1, 3, 64, 100, 130, 1376}) check({k, n, algorithm::undef, 0, 0, false, false, layout});
}

TEST(PackedGemv, AppliesBiasEachActivationAndAResidualRow) {
  for (auto [act, alpha, beta] : std::vector<std::tuple<algorithm, float, float>>{
           {algorithm::eltwise_relu, 0.f, 0.f},
           {algorithm::eltwise_relu, 0.1f, 0.f},
           {algorithm::eltwise_tanh, 0.f, 0.f},
           {algorithm::eltwise_logistic, 0.f, 0.f},
           {algorithm::eltwise_swish, 1.f, 0.f},
           {algorithm::eltwise_gelu_erf, 0.f, 0.f},
           {algorithm::eltwise_gelu_tanh, 0.f, 0.f},
           {algorithm::eltwise_hardswish, 0.f, 0.f},
           {algorithm::eltwise_linear, 0.5f, -1.f}})
    for (memory::format_tag layout : kLayouts) check({77, 200, act, alpha, beta, true, true, layout});
}

// Up to 16 rows of x against the transposed layout: one and two vectors of rows, full and
// partial (the padded rows must not leak), column blocks and the single columns after them, with
// a per-row and a broadcast residual.
TEST(PackedGemv, TakesAFewRowsOnTheTransposedLayout) {
  for (int64_t m : {2, 3, 5, 7, 8, 9, 13, 16})
    for (bool row_residual : {false, true})
      check({37, 131, algorithm::eltwise_gelu_erf, 0.f, 0.f, true, true, memory::format_tag::ba, m, row_residual});
  for (int64_t m : {8, 16}) check({512, 768, algorithm::undef, 0.f, 0.f, false, false, memory::format_tag::ba, m, false});
}

TEST(PackedGemv, RunsOnAnyThreadWidth) {
  const int before = thread_width();
  for (int width : {1, 2, 3}) {
    set_thread_width(width);
    for (memory::format_tag layout : kLayouts) check({512, 1376, algorithm::eltwise_swish, 1.f, 0.f, true, false, layout});
  }
  set_thread_width(before);
}

TEST(PackedGemv, DeclinesWhatItCannotRun) {
  dnnl::post_ops none;
  EXPECT_FALSE(PackedGemv::make(row(64), memory::desc({64, 64}, memory::data_type::f32, memory::format_tag::ab),
                                row(64), false, none))
      << "plain weights";
  EXPECT_FALSE(PackedGemv::make(memory::desc({2, 64}, memory::data_type::f32, memory::format_tag::ab), panels(64, 64),
                                memory::desc({2, 64}, memory::data_type::f32, memory::format_tag::ab), false, none))
      << "two rows on the panel layout";
  EXPECT_FALSE(PackedGemv::make(rows(17, 64), memory::desc({64, 64}, memory::data_type::f32, memory::format_tag::ba),
                                rows(17, 64), false, none))
      << "more rows than it takes";
  dnnl::post_ops exp;
  exp.append_eltwise(1.f, algorithm::eltwise_exp, 0.f, 0.f);
  EXPECT_FALSE(PackedGemv::make(row(64), panels(64, 64), row(64), false, exp)) << "an eltwise it does not know";
  dnnl::post_ops mul;
  mul.append_binary(algorithm::binary_mul, row(64));
  EXPECT_FALSE(PackedGemv::make(row(64), panels(64, 64), row(64), false, mul)) << "a binary other than add";
  dnnl::post_ops scalar;
  scalar.append_binary(algorithm::binary_add, memory::desc({1, 1}, memory::data_type::f32, memory::format_tag::ab));
  EXPECT_FALSE(PackedGemv::make(row(64), panels(64, 64), row(64), false, scalar)) << "a broadcast scalar";
}

}  // namespace
}  // namespace fusor::cpu
