// The attributes RNN, GRU and LSTM share (direction, activations with their alpha/beta, clip,
// hidden_size, layout), read and checked in one place for the shape functions and the kernels.
#pragma once
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace fusor {

enum class RnnActivationKind {
  Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
};

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::Tanh;
  double alpha = 0.0, beta = 0.0;
};

enum class RnnDirection { Forward, Reverse, Bidirectional };

struct RecurrentAttrs {
  RnnDirection direction = RnnDirection::Forward;
  int64_t num_directions = 1;
  int64_t hidden_size = -1;            // -1 when the attribute is absent
  int64_t layout = 0;                  // 0: [seq, batch, ...]; 1: [batch, seq, ...]
  std::optional<double> clip;          // gate inputs are clipped to [-clip, clip]
  // functions_per_direction entries per direction, the forward direction's first.
  std::vector<RnnActivation> activations;
  size_t functions_per_direction = 0;
  const RnnActivation* functions(int64_t direction) const {
    return activations.data() + static_cast<size_t>(direction) * functions_per_direction;
  }
};

// `defaults` names the op's activation functions for one direction (RNN {"Tanh"}, GRU {"Sigmoid",
// "Tanh"}, LSTM {"Sigmoid", "Tanh", "Tanh"}). Throws naming the node on an unknown direction or
// activation, a wrong number of activations, a bad layout or a negative clip.
RecurrentAttrs recurrent_attrs(const Node& node, const std::vector<const char*>& defaults);

}  // namespace fusor
