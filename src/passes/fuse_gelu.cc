// GELU from its exported forms:
//   erf:  x * (1 + erf(x / sqrt(2))) * 0.5          (Div by sqrt(2) or Mul by 1/sqrt(2))
//   tanh: x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) * 0.5
// The final "* x * 0.5" may come as (x * (1 + f)) * 0.5 or (0.5 * x) * (1 + f). Every constant is
// checked; a look-alike with other constants is declined with the constant that differs.
#include <cmath>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_gelu";
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;

struct GeluMatch {
  std::vector<int> nodes;
  int x = -1;
};

using Result = std::variant<GeluMatch, std::string>;

std::string differs(const char* what, double got, double want) {
  return std::string(what) + " is " + std::to_string(got) + ", not " + std::to_string(want);
}

// x * (1 + f) * 0.5 after f = the Erf or Tanh output.
Result match_tail(const FusionContext& ctx, GeluMatch m, int f) {
  int add1 = match::only_consumer(ctx, f, Op::Add);
  if (add1 < 0) return std::string("1 + f is missing");
  auto one = match::scalar(ctx, match::other_input(ctx.node(add1), f));
  if (!one || *one != 1.0) return std::string("the constant added to the activation is not 1");
  const int onep = ctx.node(add1).outputs[0];
  int mul = match::only_consumer(ctx, onep, Op::Mul);
  if (mul < 0) return std::string("1 + f is not multiplied");
  m.nodes.push_back(add1);
  m.nodes.push_back(mul);
  int other = match::other_input(ctx.node(mul), onep);
  if (other == m.x) {  // (x * (1 + f)) * 0.5
    int half = match::only_consumer(ctx, ctx.node(mul).outputs[0], Op::Mul);
    if (half < 0) return std::string("x * (1 + f) is not halved");
    auto h = match::scalar(ctx, match::other_input(ctx.node(half), ctx.node(mul).outputs[0]));
    if (!h || *h != 0.5) return differs("the final factor", h.value_or(NAN), 0.5);
    m.nodes.push_back(half);
    return m;
  }
  int halfx = match::producer_of(ctx, other, Op::Mul);  // (0.5 * x) * (1 + f)
  if (halfx < 0 || match::other_input(ctx.node(halfx), m.x) < 0 || match::only_consumer(ctx, other) != mul)
    return std::string("1 + f is not multiplied by x / 2");
  auto h = match::scalar(ctx, match::other_input(ctx.node(halfx), m.x));
  if (!h || *h != 0.5) return differs("the factor on x", h.value_or(NAN), 0.5);
  m.nodes.push_back(halfx);
  return m;
}

Result match_erf(const FusionContext& ctx, int erf) {
  GeluMatch m;
  const int arg = ctx.node(erf).inputs[0];
  int scale = match::producer_of(ctx, arg, Op::Div);
  bool divides = scale >= 0;
  if (!divides) scale = match::producer_of(ctx, arg, Op::Mul);
  if (scale < 0 || match::only_consumer(ctx, arg) != erf) return std::string("erf's argument is not a scaled input");
  const Node& s = ctx.node(scale);
  auto c = match::scalar(ctx, s.inputs[1]);
  m.x = s.inputs[0];
  if (!c && !divides) {
    c = match::scalar(ctx, s.inputs[0]);
    m.x = s.inputs[1];
  }
  if (!c) return std::string("erf's scale is not a scalar constant");
  double factor = divides ? 1.0 / *c : *c;
  if (!match::near(factor, 1.0 / kSqrt2, 1e-4)) return differs("erf's argument scale", factor, 1.0 / kSqrt2);
  if (ctx.type(m.x).dtype != DType::Float32) return std::string("input is not float32");
  m.nodes = {scale, erf};
  return match_tail(ctx, m, ctx.node(erf).outputs[0]);
}

Result match_tanh(const FusionContext& ctx, int tanh) {
  GeluMatch m;
  int outer = match::producer_of(ctx, ctx.node(tanh).inputs[0], Op::Mul);
  if (outer < 0) return std::string("tanh's argument is not scaled");
  const Node& o = ctx.node(outer);
  int inner = -1;
  std::optional<double> c;
  for (int k = 0; k < 2 && inner < 0; ++k)
    if ((c = match::scalar(ctx, o.inputs[static_cast<size_t>(k)]))) inner = o.inputs[static_cast<size_t>(1 - k)];
  if (!c || !match::near(*c, kSqrt2OverPi, 1e-4)) return differs("tanh's argument scale", c.value_or(NAN), kSqrt2OverPi);
  int add = match::producer_of(ctx, inner, Op::Add);
  if (add < 0) return std::string("tanh's argument is not x + k * x^3");
  for (int k = 0; k < 2; ++k) {
    m.x = ctx.node(add).inputs[static_cast<size_t>(k)];
    int cubic = match::producer_of(ctx, ctx.node(add).inputs[static_cast<size_t>(1 - k)], Op::Mul);
    if (cubic < 0) continue;
    const Node& cm = ctx.node(cubic);
    int pow = -1;
    std::optional<double> k3;
    for (int j = 0; j < 2 && pow < 0; ++j)
      if ((k3 = match::scalar(ctx, cm.inputs[static_cast<size_t>(j)]))) pow = match::producer_of(ctx, cm.inputs[static_cast<size_t>(1 - j)], Op::Pow);
    if (pow < 0 || ctx.node(pow).inputs[0] != m.x) continue;
    auto e = match::scalar(ctx, ctx.node(pow).inputs[1]);
    if (!e || *e != 3.0) return differs("the exponent", e.value_or(NAN), 3.0);
    if (!match::near(*k3, 0.044715, 1e-4)) return differs("the cubic coefficient", *k3, 0.044715);
    for (int v : {ctx.node(pow).outputs[0], cm.outputs[0], ctx.node(add).outputs[0], o.outputs[0]})
      if (match::only_consumer(ctx, v) < 0) return std::string("an intermediate of the tanh form is used elsewhere");
    m.nodes = {pow, cubic, add, outer, tanh};
    return match_tail(ctx, m, ctx.node(tanh).outputs[0]);
  }
  return std::string("tanh's argument is not x + k * x^3");
}

}  // namespace

void fuse_gelu(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    Op op = ctx.node(i).op;
    if (op != Op::Erf && op != Op::Tanh) continue;
    Result r = op == Op::Erf ? match_erf(ctx, i) : match_tanh(ctx, i);
    if (auto* why = std::get_if<std::string>(&r)) {
      ctx.decline(kPass, {i}, *why);
      continue;
    }
    auto& m = std::get<GeluMatch>(r);
    std::map<std::string, Attribute> attrs = {{"approximate", std::string(op == Op::Erf ? "none" : "tanh")}};
    // The fused node replaces nodes at or after the scale, which may sit before i: rescan.
    if (ctx.fuse(kPass, m.nodes, FusedKind::Gelu, "gelu", std::move(attrs), {}, {m.x})) i = -1;
  }
}

}  // namespace fusor::passes
