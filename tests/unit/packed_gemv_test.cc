// The one-row GEMV over oneDNN's 64-column panel layout and over the transposed layout ("ba"):
// every column (a partial last panel, K not a multiple of 16 or of the vector), bias, each eltwise
// post-op as oneDNN defines it and a residual row, against a double-precision loop; and it
// declines what it cannot run exactly.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/packed_gemv.h"
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
memory::desc row(int64_t n) { return rows(1, n); }
// Both layouts it reads: brgemm's panels (AVX-512) and gemm's transposed weights (AVX2).
constexpr memory::format_tag kLayouts[] = {memory::format_tag::BA16a64b, memory::format_tag::ba};

struct Case {
  int64_t k, n;
  algorithm act;  // undef: none
  float alpha, beta;
  bool bias, residual;
  memory::format_tag layout = memory::format_tag::BA16a64b;
};

void check(const Case& c) {
  SCOPED_TRACE("K " + std::to_string(c.k) + " N " + std::to_string(c.n) + " act " + std::to_string(static_cast<int>(c.act)) +
               (c.layout == memory::format_tag::ba ? " ba" : " panels"));
  const auto w = pattern(c.k * c.n, 0.2f, 1), x = pattern(c.k, 1.f, 2), bias = pattern(c.n, 0.5f, 3),
             res = pattern(c.n, 2.f, 4);
  auto& eng = onednn::engine();
  memory plain(memory::desc({c.k, c.n}, memory::data_type::f32, memory::format_tag::ab), eng,
               const_cast<float*>(w.data()));
  memory packed(memory::desc({c.k, c.n}, memory::data_type::f32, c.layout), eng);
  onednn::execute_reorder(dnnl::reorder(plain, packed), plain, packed);

  dnnl::post_ops po;
  if (c.act != algorithm::undef) po.append_eltwise(1.f, c.act, c.alpha, c.beta);
  if (c.residual) po.append_binary(algorithm::binary_add, row(c.n));
  const auto gemv = PackedGemv::make(row(c.k), packed.get_desc(), row(c.n), c.bias, po);
  ASSERT_TRUE(gemv.has_value());
  std::vector<float> y(static_cast<size_t>(c.n) + 1, -7.f);  // one float past the end: must stay
  const float* binary[] = {res.data()};
  gemv->execute(x.data(), static_cast<const float*>(packed.get_data_handle()), c.bias ? bias.data() : nullptr,
                y.data(), std::span<const float* const>(binary, c.residual ? 1 : 0));
  for (int64_t j = 0; j < c.n; ++j) {
    double acc = c.bias ? bias[static_cast<size_t>(j)] : 0.0;
    for (int64_t r = 0; r < c.k; ++r) acc += double{x[static_cast<size_t>(r)]} * w[static_cast<size_t>(r * c.n + j)];
    if (c.act != algorithm::undef) acc = eltwise(c.act, acc, c.alpha, c.beta);
    if (c.residual) acc += res[static_cast<size_t>(j)];
    ASSERT_NEAR(y[static_cast<size_t>(j)], acc, 1e-5 * (1 + std::abs(acc))) << "column " << j;
  }
  EXPECT_EQ(y.back(), -7.f);
}

TEST(PackedGemv, MatchesADoubleLoopOnEveryColumn) {
  for (memory::format_tag layout : kLayouts)
    for (int64_t k : {1, 5, 16, 37, 512})
      for (int64_t n : {1, 3, 64, 100, 130, 1376}) check({k, n, algorithm::undef, 0, 0, false, false, layout});
}

TEST(PackedGemv, AppliesBiasEachActivationAndAResidualRow) {
  for (auto [act, alpha, beta] : test::epilogue_activations())
    for (memory::format_tag layout : kLayouts) check({77, 200, act, alpha, beta, true, true, layout});
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
  EXPECT_FALSE(PackedGemv::make(rows(2, 64), memory::desc({64, 64}, memory::data_type::f32, memory::format_tag::ba),
                                rows(2, 64), false, none))
      << "two rows on the transposed layout (PanelGemm's)";
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
