// The activations the epilogue passes put in a fused node's `activation` attribute, as oneDNN
// eltwise post-ops. One table, so FusedMatMul and FusedConv accept the same names.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <optional>
#include <string>

namespace fusor::cpu::onednn {

// The eltwise algorithm for `activation` (relu, leaky_relu, tanh, sigmoid, hardswish, silu,
// gelu_erf, gelu_tanh);
// nullopt for "none" or a name this table does not know.
inline std::optional<dnnl::algorithm> eltwise_for(const std::string& activation) {
  if (activation == "relu" || activation == "leaky_relu") return dnnl::algorithm::eltwise_relu;
  if (activation == "tanh") return dnnl::algorithm::eltwise_tanh;
  if (activation == "sigmoid") return dnnl::algorithm::eltwise_logistic;
  if (activation == "hardswish") return dnnl::algorithm::eltwise_hardswish;  // x * clip(x / 6 + 1/2, 0, 1)
  if (activation == "silu") return dnnl::algorithm::eltwise_swish;  // x * sigmoid(alpha * x), alpha 1
  if (activation == "gelu_erf") return dnnl::algorithm::eltwise_gelu_erf;
  if (activation == "gelu_tanh") return dnnl::algorithm::eltwise_gelu_tanh;
  return std::nullopt;
}

// Whether the chain has a ReLU of slope 0, which oneDNN computes as max(x, 0): 0 for NaN
// (Kernel::drops_nan). A nonzero slope takes a compare and blend, which keeps NaN.
inline bool post_ops_drop_nan(const dnnl::post_ops& po) {
  for (int i = 0; i < po.len(); ++i) {
    if (po.kind(i) != dnnl::primitive::kind::eltwise) continue;
    float scale = 0, alpha = 0, beta = 0;
    dnnl::algorithm alg;
    po.get_params_eltwise(i, scale, alg, alpha, beta);
    if (alg == dnnl::algorithm::eltwise_relu && alpha == 0.f) return true;
  }
  return false;
}

// The eltwise post-op's alpha: LeakyRelu's slope (the node's `alpha`), 1 for SiLU, else unused.
inline float eltwise_alpha(const std::string& activation, float node_alpha) {
  if (activation == "leaky_relu") return node_alpha;
  return activation == "silu" ? 1.f : 0.f;
}

}  // namespace fusor::cpu::onednn
