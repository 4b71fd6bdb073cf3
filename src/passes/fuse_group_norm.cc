// GroupNorm as PyTorch exports it: Reshape x [N, C, ...] to [N, G, -1], InstanceNormalization
// (scale and bias per group), Reshape back to x's shape, Mul by gamma and Add beta per channel,
// then optionally SiLU (Sigmoid and Mul by its input). Unfused it is two kernels and three passes
// over memory (U-Net's every norm), and the reshapes keep the convolutions around it out of
// their blocked layouts. The match starts at the InstanceNormalization; a near miss is declined
// with its reason and left to the other passes.
#include <algorithm>
#include <variant>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_group_norm";

struct GroupNormMatch {
  std::vector<int> nodes;
  int x = -1, group_scale = -1, group_bias = -1, gamma = -1, beta = -1;
  int64_t groups = 0;
  double epsilon = 0;
  bool silu = false;
};

// Whether `value` is a float32 constant of one value per channel of `x_dims` (axis 1), such as
// [C, 1, 1] against [N, C, H, W].
bool per_channel(const FusionContext& ctx, int value, const Dims& x_dims) {
  const Tensor* t = ctx.constant(value);
  if (!t || t->dtype() != DType::Float32 || t->dims().size() > x_dims.size() || t->numel() != x_dims[1]) return false;
  const size_t skip = x_dims.size() - t->dims().size();
  for (size_t j = 0; j < t->dims().size(); ++j)
    if (j + skip != 1 && t->dims()[j] != 1) return false;
  return true;
}

std::variant<GroupNormMatch, std::string> match_at(const FusionContext& ctx, int norm) {
  const Node& in = ctx.node(norm);
  GroupNormMatch m;
  const int to_groups = match::producer_of(ctx, in.inputs[0], Op::Reshape);
  if (to_groups < 0) return std::string("its input is not a Reshape of a [N, C, ...] tensor (not a GroupNorm)");
  m.x = ctx.node(to_groups).inputs[0];
  const TensorType& xt = ctx.type(m.x);
  const Dims& grouped = ctx.type(in.inputs[0]).dims;
  if (xt.dtype != DType::Float32) return std::string("input is not float32");
  if (xt.dims.size() < 3 || grouped.size() != 3 || grouped[0] != xt.dims[0] || grouped[1] <= 0 ||
      xt.dims[1] % grouped[1] != 0 || numel_of(grouped) != numel_of(xt.dims))
    return "the Reshape to " + dims_to_string(grouped) + " does not group the channels of " + dims_to_string(xt.dims);
  if (match::only_consumer(ctx, in.inputs[0]) != norm) return std::string("the grouped tensor has other readers");
  m.groups = grouped[1];
  m.group_scale = in.inputs[1];
  m.group_bias = in.inputs[2];
  for (int v : {m.group_scale, m.group_bias}) {
    const Tensor* t = ctx.constant(v);
    if (!t || t->dtype() != DType::Float32 || t->numel() != m.groups)
      return std::string("the InstanceNormalization scale or bias is not a float32 constant per group");
  }
  m.epsilon = in.attr_float("epsilon", 1e-5f);
  const int back = match::only_consumer(ctx, in.outputs[0], Op::Reshape);
  if (back < 0 || ctx.type(ctx.node(back).outputs[0]).dims != xt.dims)
    return std::string("the normalized groups are not reshaped back to the input's shape");
  int out = ctx.node(back).outputs[0];
  const int mul = match::only_consumer(ctx, out, Op::Mul);
  if (mul < 0 || !per_channel(ctx, m.gamma = match::other_input(ctx.node(mul), out), xt.dims))
    return std::string("no Mul by a float32 constant per channel follows");
  out = ctx.node(mul).outputs[0];
  const int add = match::only_consumer(ctx, out, Op::Add);
  if (add < 0 || !per_channel(ctx, m.beta = match::other_input(ctx.node(add), out), xt.dims))
    return std::string("no Add of a float32 constant per channel follows");
  m.nodes = {to_groups, norm, back, mul, add};
  // SiLU: y * Sigmoid(y), where y is read by those two alone.
  out = ctx.node(add).outputs[0];
  const auto& readers = ctx.consumers(out);
  if (readers.size() == 2 && std::count(ctx.graph().outputs.begin(), ctx.graph().outputs.end(), out) == 0) {
    const int sig = ctx.node(readers[0]).op == Op::Sigmoid ? readers[0] : readers[1];
    const int times = sig == readers[0] ? readers[1] : readers[0];
    if (ctx.node(sig).op == Op::Sigmoid && ctx.node(times).op == Op::Mul &&
        match::only_consumer(ctx, ctx.node(sig).outputs[0], Op::Mul) == times &&
        match::other_input(ctx.node(times), out) == ctx.node(sig).outputs[0]) {
      m.nodes.insert(m.nodes.end(), {sig, times});
      m.silu = true;
    }
  }
  return m;
}

}  // namespace

void fuse_group_norm(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    if (ctx.node(i).op != Op::InstanceNormalization) continue;
    auto r = match_at(ctx, i);
    if (auto* why = std::get_if<std::string>(&r)) {
      ctx.decline(kPass, {i}, *why);
      continue;
    }
    auto& m = std::get<GroupNormMatch>(r);
    std::map<std::string, Attribute> attrs = {{"groups", m.groups},
                                              {"epsilon", static_cast<float>(m.epsilon)},
                                              {"activation", std::string(m.silu ? "silu" : "none")}};
    std::sort(m.nodes.begin(), m.nodes.end());
    const int first = m.nodes.front();
    if (ctx.fuse(kPass, m.nodes, FusedKind::GroupNorm, "groupnorm", std::move(attrs), {},
                 {m.x, m.group_scale, m.group_bias, m.gamma, m.beta}))
      i = std::min(i, first) - 1;
  }
}

}  // namespace fusor::passes
