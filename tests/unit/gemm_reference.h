// What the GEMM kernel tests compare against: deterministic operands and oneDNN's eltwise
// post-ops in double precision.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

namespace fusor::test {

// m dense rows of n floats, and K x N weights in brgemm's panels (BA16a64b): the descs of the
// few-row GEMM tests.
inline dnnl::memory::desc rows(int64_t m, int64_t n) {
  return dnnl::memory::desc({m, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
}
inline dnnl::memory::desc panels(int64_t k, int64_t n) {
  return dnnl::memory::desc({k, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::BA16a64b);
}

// n values in [-scale, scale], different per seed.
inline std::vector<float> pattern(int64_t n, float scale, int seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * static_cast<float>(static_cast<int>((i * 7919 + seed * 104729) % 97) - 48) / 48.f;
  return v;
}

// One eltwise post-op as oneDNN 2.6 defines it.
inline double eltwise(dnnl::algorithm alg, double x, double alpha, double beta) {
  using dnnl::algorithm;
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

// Every eltwise post-op fusor's GEMM epilogue takes (GemmEpilogue), with its alpha and beta.
inline const std::vector<std::tuple<dnnl::algorithm, float, float>>& epilogue_activations() {
  using dnnl::algorithm;
  static const std::vector<std::tuple<algorithm, float, float>> all{
      {algorithm::eltwise_relu, 0.f, 0.f},      {algorithm::eltwise_relu, 0.1f, 0.f},
      {algorithm::eltwise_tanh, 0.f, 0.f},      {algorithm::eltwise_logistic, 0.f, 0.f},
      {algorithm::eltwise_swish, 1.f, 0.f},     {algorithm::eltwise_gelu_erf, 0.f, 0.f},
      {algorithm::eltwise_gelu_tanh, 0.f, 0.f}, {algorithm::eltwise_hardswish, 0.f, 0.f},
      {algorithm::eltwise_linear, 0.5f, -1.f}};
  return all;
}

}  // namespace fusor::test
