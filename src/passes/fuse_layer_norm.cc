// LayerNorm from its decomposed export: ReduceMean, Sub, Pow(2), ReduceMean, Add(eps), Sqrt, Div,
// then optionally Mul(gamma) and Add(beta). The match starts at a ReduceMean whose result is
// subtracted from its own input; every assumption the kernel makes is checked, and a near miss
// (another axis, another exponent, a non-scalar epsilon, gamma of the wrong shape) is declined
// with its reason and left to the elementwise pass.
//
// RMSNorm (LLaMA, T5) is the same without the centering: Pow(x, 2), ReduceMean, Add(eps), Sqrt,
// then x / sqrt or x * (1 / sqrt) (Div(1, .) or Reciprocal), optionally a float-to-float Cast and
// Mul(gamma); a float-to-float Cast that only feeds it joins too. It becomes the same LayerNorm
// kind with attribute rms = 1 (the kernel skips the mean). Its match starts at the ReduceMean of
// the squares.
#include <algorithm>
#include <optional>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_layer_norm";

struct LayerNormMatch {
  std::vector<int> nodes;
  int x = -1, gamma = -1, beta = -1;
  int64_t axis = -1;
  double epsilon = 0;
};

// Returns the match, or the reason a ReduceMean-Sub start did not complete.
std::variant<LayerNormMatch, std::string> match_at(const FusionContext& ctx, int mean1) {
  const Node& r1 = ctx.node(mean1);
  LayerNormMatch m;
  m.x = r1.inputs[0];
  const TensorType& xt = ctx.type(m.x);
  if (xt.dtype != DType::Float32) return std::string("input is not float32");
  const size_t rank = xt.dims.size();
  auto axes = match::reduce_axes(ctx, r1, rank);
  if (!axes || axes->empty()) return std::string("reduction axes are not known at plan time");
  for (size_t i = 0; i < axes->size(); ++i)
    if ((*axes)[i] != static_cast<int64_t>(rank - axes->size() + i))
      return "normalizes over axes not at the end of the shape (axis " + std::to_string((*axes)[0]) + " of rank " +
             std::to_string(rank) + ")";
  if (r1.attr_int("keepdims", 1) != 1) return std::string("ReduceMean drops the reduced axes (keepdims=0)");
  m.axis = (*axes)[0];
  int64_t n = 1;
  for (size_t i = static_cast<size_t>(m.axis); i < rank; ++i) n *= xt.dims[i];

  int sub = -1;
  for (int c : ctx.consumers(r1.outputs[0]))
    if (ctx.node(c).op == Op::Sub && ctx.node(c).inputs[0] == m.x && ctx.node(c).inputs[1] == r1.outputs[0]) sub = c;
  if (sub < 0) return std::string("the mean is not subtracted from the input");
  const int centered = ctx.node(sub).outputs[0];
  int pow = -1, div = -1;
  for (int c : ctx.consumers(centered)) {
    const Node& cn = ctx.node(c);
    if (cn.op == Op::Pow && cn.inputs[0] == centered) pow = c;
    else if (cn.op == Op::Div && cn.inputs[0] == centered) div = c;
    else return "the centered input is also used by " + cn.describe();
  }
  if (pow < 0 || div < 0) return std::string("no Pow and Div of the centered input (not a LayerNorm)");
  auto exponent = match::scalar(ctx, ctx.node(pow).inputs[1]);
  if (!exponent || *exponent != 2.0) return std::string("the variance is not a mean of squares (Pow exponent is not 2)");
  int mean2 = match::only_consumer(ctx, ctx.node(pow).outputs[0], Op::ReduceMean);
  if (mean2 < 0) return std::string("the squares are not averaged by one ReduceMean");
  if (match::reduce_axes(ctx, ctx.node(mean2), rank) != axes || ctx.node(mean2).attr_int("keepdims", 1) != 1)
    return std::string("mean and variance reduce over different axes");
  int add_eps = match::only_consumer(ctx, ctx.node(mean2).outputs[0], Op::Add);
  if (add_eps < 0) return std::string("no epsilon is added to the variance");
  auto eps = match::scalar(ctx, match::other_input(ctx.node(add_eps), ctx.node(mean2).outputs[0]));
  if (!eps || *eps < 0) return std::string("epsilon is not a non-negative scalar constant");
  m.epsilon = *eps;
  int sqrt = match::only_consumer(ctx, ctx.node(add_eps).outputs[0], Op::Sqrt);
  if (sqrt < 0 || ctx.node(div).inputs[1] != ctx.node(sqrt).outputs[0])
    return std::string("the centered input is not divided by sqrt(variance + epsilon)");
  m.nodes = {mean1, sub, pow, mean2, add_eps, sqrt, div};

  // Optional affine part: gamma and beta must cover exactly the normalized axes, aligned with
  // them (a [4, 1] gamma beside normalized dims [1, 4] has their 4 elements but broadcasts the
  // output to [.., 4, 4]: applied per element it was off by 2.7).
  auto affine_operand = [&](int node, int from) -> int {
    int other = match::other_input(ctx.node(node), from);
    const Tensor* t = ctx.constant(other);
    if (!t || t->dtype() != DType::Float32 || t->numel() != n || t->dims().size() > rank) return -1;
    const size_t first = rank - t->dims().size();  // the x axis t's first dim aligns with
    for (size_t i = 0; i < t->dims().size(); ++i)
      if (t->dims()[i] != (first + i < static_cast<size_t>(m.axis) ? 1 : xt.dims[first + i])) return -1;
    return other;
  };
  int out = ctx.node(div).outputs[0];
  if (int mul = match::only_consumer(ctx, out, Op::Mul); mul >= 0 && (m.gamma = affine_operand(mul, out)) >= 0) {
    m.nodes.push_back(mul);
    out = ctx.node(mul).outputs[0];
    if (int add = match::only_consumer(ctx, out, Op::Add); add >= 0 && (m.beta = affine_operand(add, out)) >= 0)
      m.nodes.push_back(add);
  }
  return m;
}

// A Cast to the type it already has: a copy, in both RMSNorm forms around the float32 math.
bool same_type_cast(const FusionContext& ctx, int node) {
  const Node& n = ctx.node(node);
  return n.op == Op::Cast && ctx.type(n.inputs[0]).dtype == DType::Float32 && ctx.type(n.outputs[0]).dtype == DType::Float32;
}

// RMSNorm from the ReduceMean `mean` of the squares; the reason when it is not one (nullopt when
// `mean` does not average squares at all: not an opportunity).
std::optional<std::variant<LayerNormMatch, std::string>> match_rms_at(const FusionContext& ctx, int mean) {
  const Node& r = ctx.node(mean);
  const int pow = match::producer_of(ctx, r.inputs[0], Op::Pow);
  if (pow < 0) return std::nullopt;
  auto exponent = match::scalar(ctx, ctx.node(pow).inputs[1]);
  if (!exponent || *exponent != 2.0 || match::only_consumer(ctx, ctx.node(pow).outputs[0], Op::ReduceMean) != mean)
    return std::nullopt;
  LayerNormMatch m;
  m.x = ctx.node(pow).inputs[0];
  // x - mean(x) squared is a LayerNorm's variance, not an RMSNorm: that LayerNorm is matched (or
  // was disabled, and stays unfused) from its first ReduceMean.
  if (int sub = match::producer_of(ctx, m.x, Op::Sub); sub >= 0) {
    const int centre = match::producer_of(ctx, ctx.node(sub).inputs[1], Op::ReduceMean);
    if (centre >= 0 && ctx.node(centre).inputs[0] == ctx.node(sub).inputs[0]) return std::nullopt;
  }
  const TensorType& xt = ctx.type(m.x);
  if (xt.dtype != DType::Float32) return std::string("input is not float32");
  const size_t rank = xt.dims.size();
  auto axes = match::reduce_axes(ctx, r, rank);
  if (!axes || axes->size() != 1 || (*axes)[0] != static_cast<int64_t>(rank) - 1)
    return std::string("the mean of squares is not over the last axis alone");
  if (r.attr_int("keepdims", 1) != 1) return std::string("ReduceMean drops the reduced axis (keepdims=0)");
  m.axis = (*axes)[0];
  const int64_t n = xt.dims.back();
  const int add_eps = match::only_consumer(ctx, r.outputs[0], Op::Add);
  if (add_eps < 0) return std::string("no epsilon is added to the mean of squares");
  auto eps = match::scalar(ctx, match::other_input(ctx.node(add_eps), r.outputs[0]));
  if (!eps || *eps < 0) return std::string("epsilon is not a non-negative scalar constant");
  m.epsilon = *eps;
  const int sqrt = match::only_consumer(ctx, ctx.node(add_eps).outputs[0], Op::Sqrt);
  if (sqrt < 0) return std::string("the mean of squares is not square-rooted");
  m.nodes = {pow, mean, add_eps, sqrt};
  const int rms = ctx.node(sqrt).outputs[0];
  int out = -1;
  if (int div = match::only_consumer(ctx, rms, Op::Div); div >= 0 && ctx.node(div).inputs[1] == rms) {
    const Node& dn = ctx.node(div);
    if (dn.inputs[0] == m.x) {  // x / rms
      m.nodes.push_back(div);
      out = dn.outputs[0];
    } else if (auto one = match::scalar(ctx, dn.inputs[0]); one && *one == 1.0) {  // 1 / rms, then x * that
      const int mul = match::only_consumer(ctx, dn.outputs[0], Op::Mul);
      if (mul < 0 || match::other_input(ctx.node(mul), dn.outputs[0]) != m.x)
        return std::string("1 / sqrt(mean of squares + epsilon) does not scale the input");
      m.nodes.insert(m.nodes.end(), {div, mul});
      out = ctx.node(mul).outputs[0];
    }
  } else if (int rec = match::only_consumer(ctx, rms, Op::Reciprocal); rec >= 0) {
    const int mul = match::only_consumer(ctx, ctx.node(rec).outputs[0], Op::Mul);
    if (mul < 0 || match::other_input(ctx.node(mul), ctx.node(rec).outputs[0]) != m.x)
      return std::string("1 / sqrt(mean of squares + epsilon) does not scale the input");
    m.nodes.insert(m.nodes.end(), {rec, mul});
    out = ctx.node(mul).outputs[0];
  }
  if (out < 0) return std::string("the input is not divided by sqrt(mean of squares + epsilon)");
  // The scale: gamma of the normalized axis' size, after an optional float-to-float Cast.
  int scaled_from = out, cast = -1;
  if (int c = match::only_consumer(ctx, out, Op::Cast); c >= 0 && same_type_cast(ctx, c)) {
    cast = c;
    scaled_from = ctx.node(c).outputs[0];
  }
  const int mul = match::only_consumer(ctx, scaled_from, Op::Mul);
  const int gamma = mul >= 0 ? match::other_input(ctx.node(mul), scaled_from) : -1;
  const Tensor* g = gamma >= 0 ? ctx.constant(gamma) : nullptr;
  // n elements along the last axis ([.., 1, n]): a [n, 1] scale has n elements too, but it scales
  // along another axis (the kernel applied it along the last: off by 2.5).
  if (!g || g->dtype() != DType::Float32 || g->numel() != n || g->dims().size() > rank ||
      (g->dims().empty() ? n != 1 : g->dims().back() != n))
    return std::string("no Mul by a float32 scale of the normalized axis follows (the fast kernel needs one)");
  if (cast >= 0) m.nodes.push_back(cast);
  m.nodes.push_back(mul);
  m.gamma = gamma;
  // A float-to-float Cast feeding only this pattern joins it: its input is the real x.
  if (int c = ctx.graph().values[static_cast<size_t>(m.x)].producer; c >= 0 && same_type_cast(ctx, c)) {
    const auto& readers = ctx.consumers(m.x);
    if (std::all_of(readers.begin(), readers.end(), [&](int k) { return std::count(m.nodes.begin(), m.nodes.end(), k) > 0; })) {
      m.nodes.push_back(c);
      m.x = ctx.node(c).inputs[0];
    }
  }
  return m;
}

}  // namespace

void fuse_layer_norm(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    if (ctx.node(i).op != Op::ReduceMean) continue;
    if (auto rms = match_rms_at(ctx, i)) {
      if (auto* why = std::get_if<std::string>(&*rms)) {
        ctx.decline(kPass, {i}, "RMSNorm: " + *why);
        continue;
      }
      auto& m = std::get<LayerNormMatch>(*rms);
      std::map<std::string, Attribute> attrs = {{"axis", m.axis},
                                                {"epsilon", static_cast<float>(m.epsilon)},
                                                {"has_scale", int64_t{1}},
                                                {"has_bias", int64_t{0}},
                                                {"rms", int64_t{1}}};
      std::sort(m.nodes.begin(), m.nodes.end());
      const int first = m.nodes.front();
      if (ctx.fuse(kPass, m.nodes, FusedKind::LayerNorm, "rmsnorm", std::move(attrs), {}, {m.x, m.gamma}))
        i = std::min(i, first) - 1;
      continue;
    }
    auto r = match_at(ctx, i);
    if (auto* why = std::get_if<std::string>(&r)) {
      // Only a ReduceMean that starts the pattern (its mean is subtracted) is an opportunity.
      if (*why != "the mean is not subtracted from the input" && *why != "input is not float32")
        ctx.decline(kPass, {i}, *why);
      continue;
    }
    auto& m = std::get<LayerNormMatch>(r);
    std::vector<int> leading = {m.x};
    if (m.gamma >= 0) leading.push_back(m.gamma);
    if (m.beta >= 0) leading.push_back(m.beta);
    std::map<std::string, Attribute> attrs = {{"axis", m.axis},
                                              {"epsilon", static_cast<float>(m.epsilon)},
                                              {"has_scale", int64_t{m.gamma >= 0}},
                                              {"has_bias", int64_t{m.beta >= 0}}};
    // Nodes before i keep their places, so the scan goes on from i.
    if (ctx.fuse(kPass, m.nodes, FusedKind::LayerNorm, "layernorm", std::move(attrs), {}, leading)) --i;
  }
}

}  // namespace fusor::passes
