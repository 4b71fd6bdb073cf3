#include "ir/recurrent_attrs.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "ir/shape_util.h"

namespace fusor {
namespace {

struct ActivationSpec {
  const char* name;
  RnnActivationKind kind;
  bool uses_alpha, uses_beta;
  double alpha, beta;  // defaults
};

// ONNX's activation list for recurrent ops, with the defaults of their parameters.
constexpr ActivationSpec kActivations[] = {
    {"relu", RnnActivationKind::Relu, false, false, 0, 0},
    {"tanh", RnnActivationKind::Tanh, false, false, 0, 0},
    {"sigmoid", RnnActivationKind::Sigmoid, false, false, 0, 0},
    {"affine", RnnActivationKind::Affine, true, true, 1.0, 0.0},
    {"leakyrelu", RnnActivationKind::LeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", RnnActivationKind::ThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", RnnActivationKind::ScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", RnnActivationKind::HardSigmoid, true, true, 0.2, 0.5},
    {"elu", RnnActivationKind::Elu, true, false, 1.0, 0},
    {"softsign", RnnActivationKind::Softsign, false, false, 0, 0},
    {"softplus", RnnActivationKind::Softplus, false, false, 0, 0},
};

const ActivationSpec& find_activation(const Node& node, const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const ActivationSpec& s : kActivations)
    if (lower == s.name) return s;
  fail(node, "unknown activation '" + name +
                 "' (expects Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, "
                 "Elu, Softsign or Softplus)", ErrorKind::InvalidModel);
}

}  // namespace

RecurrentAttrs recurrent_attrs(const Node& node, const std::vector<const char*>& defaults) {
  RecurrentAttrs a;
  std::string direction = node.attr_string("direction", "forward");
  if (direction == "forward") a.direction = RnnDirection::Forward;
  else if (direction == "reverse") a.direction = RnnDirection::Reverse;
  else if (direction == "bidirectional") a.direction = RnnDirection::Bidirectional;
  else fail(node, "unknown direction '" + direction + "' (expects forward, reverse or bidirectional)", ErrorKind::InvalidModel);
  a.num_directions = a.direction == RnnDirection::Bidirectional ? 2 : 1;

  a.hidden_size = node.attr_int("hidden_size", -1);
  if (node.has_attr("hidden_size") && a.hidden_size < 1)
    fail(node, "hidden_size must be positive, got " + std::to_string(a.hidden_size), ErrorKind::InvalidModel);
  a.layout = node.attr_int("layout", 0);
  if (a.layout != 0 && a.layout != 1)
    fail(node, "layout must be 0 or 1, got " + std::to_string(a.layout), ErrorKind::InvalidModel);
  if (node.has_attr("clip")) {
    double clip = node.attr_float("clip", 0.0f);
    if (!(clip >= 0.0)) fail(node, "clip must be non-negative, got " + std::to_string(clip), ErrorKind::InvalidModel);
    a.clip = clip;
  }

  // Activations: one set per direction; a single set is reused for both directions.
  std::vector<std::string> names;
  if (auto it = node.attrs.find("activations"); it != node.attrs.end()) {
    const auto* list = std::get_if<std::vector<std::string>>(&it->second);
    if (!list) fail(node, "attribute 'activations' must be a list of strings", ErrorKind::InvalidModel);
    names = *list;
  }
  const size_t per_dir = defaults.size();
  const auto dirs = static_cast<size_t>(a.num_directions);
  if (names.empty())
    for (size_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  else if (names.size() == per_dir && dirs == 2) {
    std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != per_dir * dirs)
    fail(node, "expects " + std::to_string(per_dir * dirs) + " activations, got " + std::to_string(names.size()),
         ErrorKind::InvalidModel);
  std::vector<float> alphas = node.attr_floats("activation_alpha"), betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    const ActivationSpec& spec = find_activation(node, name);
    RnnActivation act{spec.kind, spec.alpha, spec.beta};
    if (spec.uses_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (spec.uses_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    a.activations.push_back(act);
  }
  a.functions_per_direction = per_dir;
  return a;
}

}  // namespace fusor
