// The activations that fusor's own convolution kernels apply in their epilogue, on one vector of
// outputs (the names are a fused node's `activation` attribute; onednn_post_ops.h has oneDNN's).
#pragma once
#include <optional>
#include <string>

#include "kernels/cpu/simd.h"
#include "kernels/cpu/unary_ops.h"

namespace fusor::cpu {

enum class EpilogueActivation { None, Relu, LeakyRelu, Sigmoid, Silu, HardSwish };

// nullopt for a name these kernels do not apply (they then decline the node).
inline std::optional<EpilogueActivation> epilogue_activation(const std::string& name) {
  if (name == "none") return EpilogueActivation::None;
  if (name == "relu") return EpilogueActivation::Relu;
  if (name == "leaky_relu") return EpilogueActivation::LeakyRelu;
  if (name == "sigmoid") return EpilogueActivation::Sigmoid;
  if (name == "silu") return EpilogueActivation::Silu;
  if (name == "hardswish") return EpilogueActivation::HardSwish;
  return std::nullopt;
}

// `params.alpha` is LeakyRelu's slope.
inline simd::V apply_activation(EpilogueActivation act, simd::V v, const unary_ops::Params& params) {
  using namespace unary_ops;
  switch (act) {
    case EpilogueActivation::None: return v;
    case EpilogueActivation::Relu: return ReluOp::apply(v, params);
    case EpilogueActivation::LeakyRelu: return LeakyReluOp::apply(v, params);
    case EpilogueActivation::Sigmoid: return SigmoidOp::apply(v, params);
    case EpilogueActivation::Silu: return simd::silu(v);
    case EpilogueActivation::HardSwish: return HardSwishOp::apply(v, params);
  }
  return v;
}

}  // namespace fusor::cpu
