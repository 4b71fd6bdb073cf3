// A GEMM run as tiles on the thread pool gives what the one oneDNN call gives: same bias,
// activation, row-wise and broadcast residuals, a shorter last row chunk and column block,
// constant (packed) and runtime weights. Not always the same bits:
// oneDNN's AVX2 gemm picks its kernel and K blocking by M and by the CPU's caches, so a 16-row
// chunk may sum in another order than 256 rows do (seen on AMD Zen 3, not on Intel).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "kernels/cpu/matmul_onednn.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;

memory::desc dense2(int64_t rows, int64_t cols) {
  return memory::desc({rows, cols}, memory::data_type::f32, memory::dims{cols, 1});
}

std::vector<float> pattern(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>((i * 7919) % 97) - 48) / 48.f;
  return v;
}

// a [m, k] times w [k, n], in double.
std::vector<double> product(const std::vector<float>& a, const std::vector<float>& w, int64_t m, int64_t k, int64_t n) {
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t r = 0; r < k; ++r) acc += double{a[static_cast<size_t>(i * k + r)]} * w[static_cast<size_t>(r * n + j)];
      out[static_cast<size_t>(i * n + j)] = acc;
    }
  return out;
}

struct Gemm {
  int64_t M, K, N;
  bool broadcast_residual;
  bool runtime_weights = false;
};

// dst = gelu(A W + bias) + residual, built on this thread's width.
std::vector<float> run(const Gemm& g, int width) {
  set_thread_width(width);
  const auto a = pattern(static_cast<size_t>(g.M * g.K), 1.f), w = pattern(static_cast<size_t>(g.K * g.N), 0.1f);
  const auto bias = pattern(static_cast<size_t>(g.N), 0.5f);
  const int64_t res_rows = g.broadcast_residual ? 1 : g.M;
  const auto res = pattern(static_cast<size_t>(res_rows * g.N), 2.f);
  OnednnMatmul::Spec spec;
  spec.src = dense2(g.M, g.K);
  spec.weights = dense2(g.K, g.N);
  spec.dst = dense2(g.M, g.N);
  spec.bias = dense2(1, g.N);
  spec.const_weights = g.runtime_weights ? nullptr : w.data();
  spec.const_bias = bias.data();
  spec.post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
  spec.binary_mds.push_back(dense2(res_rows, g.N));
  spec.binary_indices.push_back(1);
  spec.post_ops.append_binary(dnnl::algorithm::binary_add, spec.binary_mds.back());
  OnednnMatmul m(spec);
  if (width > 1 && g.M >= 128) EXPECT_FALSE(m.uses_openmp()) << "not split: " << g.M << "x" << g.K << "x" << g.N;
  std::vector<std::byte> scratch(m.scratch_bytes());
  std::vector<float> dst(static_cast<size_t>(g.M * g.N), -1.f);
  const float* binary[] = {res.data()};
  m.execute(a.data(), w.data(), nullptr, dst.data(), binary, scratch);
  return dst;
}

TEST(MatmulTileSplit, TilesGiveWhatOneCallGives) {
  const int before = thread_width();
  for (const Gemm& g : {Gemm{256, 384, 384, false}, Gemm{100, 64, 96, false}, Gemm{1000, 32, 40, true},
                        Gemm{33, 384, 1536, false}, Gemm{128, 64, 200, true}, Gemm{600, 48, 136, false},
                        Gemm{300, 64, 200, false, true}}) {
    const auto whole = run(g, 1);
    const auto split = run(g, 4);
    ASSERT_EQ(whole.size(), split.size());
    for (size_t i = 0; i < whole.size(); ++i)
      ASSERT_NEAR(split[i], whole[i], 1e-5f * (1.f + std::abs(whole[i])))
          << "M " << g.M << " K " << g.K << " N " << g.N << " element " << i;
  }
  set_thread_width(before);
}

// Two GEMMs of one shape that differ only in their activation, or its alpha, each get their own
// primitive: the tiles' cache key held the post-ops' kinds alone, so tanh ran relu's (off by 1035).
TEST(MatmulTileSplit, GemmsThatDifferOnlyInTheirActivationKeepTheirOwn) {
  const int before = thread_width();
  set_thread_width(2);
  using A = dnnl::algorithm;
  for (int64_t m : {99, 256}) {
    const int64_t k = 48, n = 64;
    const auto a = pattern(static_cast<size_t>(m * k), 1.f), w = pattern(static_cast<size_t>(k * n), 0.5f);
    for (auto [alg, alpha] : std::vector<std::pair<A, float>>{
             {A::eltwise_relu, 0.f}, {A::eltwise_tanh, 0.f}, {A::eltwise_relu, 0.1f}, {A::eltwise_relu, 0.3f}}) {
      OnednnMatmul::Spec spec;
      spec.src = dense2(m, k);
      spec.weights = dense2(k, n);
      spec.dst = dense2(m, n);
      spec.const_weights = w.data();
      spec.post_ops.append_eltwise(1.f, alg, alpha, 0.f);
      OnednnMatmul mm(spec);
      std::vector<std::byte> scratch(mm.scratch_bytes());
      std::vector<float> dst(static_cast<size_t>(m * n));
      mm.execute(a.data(), w.data(), nullptr, dst.data(), {}, scratch);
      const std::vector<double> acc = product(a, w, m, k, n);
      for (size_t i = 0; i < acc.size(); ++i) {
        const double want = alg == A::eltwise_tanh ? std::tanh(acc[i]) : acc[i] > 0 ? acc[i] : alpha * acc[i];
        ASSERT_NEAR(dst[i], want, 1e-4 * (1 + std::abs(want))) << m << " rows, algorithm " << static_cast<int>(alg)
                                                                 << " alpha " << alpha;
      }
    }
  }
  set_thread_width(before);
}

// Who runs a GEMM: one row with packed weights goes to the GEMV on the pool where oneDNN packs
// 64-column panels (AVX-512), a tiny runtime GEMM runs on the caller alone, a larger one as
// column tiles on the pool on AVX2's jit sgemm; each gives the plain loop's numbers.
TEST(OnednnMatmul, TinyAndOneRowGemmsStayOffTheOpenmpTeam) {
  const int before = thread_width();
  set_thread_width(2);
  auto build = [](int64_t m, int64_t k, int64_t n, const float* constant) {
    OnednnMatmul::Spec spec;
    spec.src = dense2(m, k);
    spec.weights = dense2(k, n);
    spec.dst = dense2(m, n);
    spec.const_weights = constant;
    return OnednnMatmul(spec);
  };
  for (auto [m, k, n, constant] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{
           {1, 512, 768, true}, {32, 1, 6, false}, {64, 256, 256, false}}) {
    const auto a = pattern(static_cast<size_t>(m * k), 1.f), w = pattern(static_cast<size_t>(k * n), 0.1f);
    OnednnMatmul mm = build(m, k, n, constant ? w.data() : nullptr);
    if (m * k * n <= 64 * 1024) EXPECT_FALSE(mm.uses_openmp()) << "tiny " << m << "x" << k << "x" << n;
    // Runtime weights are plain; on AVX2's jit sgemm they are cut into column tiles on the pool.
    // (On AVX-512 whether oneDNN takes their tiles depends on its build: either runner is right.)
    const bool sgemm = mm.impl().rfind("gemm:", 0) == 0;
    if (m * k * n > 64 * 1024 && !constant && sgemm) EXPECT_FALSE(mm.uses_openmp()) << m << "x" << k << "x" << n;
    if (constant && mm.impl().rfind("brg:avx512", 0) == 0) EXPECT_FALSE(mm.uses_openmp()) << "one row";
    std::vector<std::byte> scratch(mm.scratch_bytes());
    std::vector<float> dst(static_cast<size_t>(m * n));
    mm.execute(a.data(), w.data(), nullptr, dst.data(), {}, scratch);
    const std::vector<double> acc = product(a, w, m, k, n);
    for (size_t i = 0; i < acc.size(); ++i) ASSERT_NEAR(dst[i], acc[i], 1e-4 * (1 + std::abs(acc[i])));
  }
  set_thread_width(before);
}

}  // namespace
}  // namespace fusor::cpu
