// Rotary position embedding in the rotate-half form, as transformers exports LLaMA, Mistral,
// Qwen2 and GPT-NeoX attention:
//   y = x * cos + Concat(-x[..., h:], x[..., :h]) * sin        h = D / 2, D = x's last dim
// i.e. Slice, Slice, Neg, Concat, Mul, Mul, Add -> one Rotary node with inputs x, cos, sin. Its
// kernel reads x once and writes y once; unfused, the five kernels wrote and read back four
// intermediates of x's size per query and key tensor of every layer. Every part of the form is
// checked (the halves, their order, the signs, which product takes which table), so a look-alike
// (the interleaved GPT-J form) is declined with why. A partial rotary (GPT-NeoX, Phi) runs this
// form on a slice of the head, which becomes the Rotary node's x.
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "fusor/error.h"
#include "ir/layout_params.h"
#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_rotary";

struct RotaryMatch {
  std::vector<int> nodes;
  int x = -1, cos = -1, sin = -1;
};

using Result = std::variant<RotaryMatch, std::string>;

// The [begin, end) of x's last axis that Slice `s` keeps, stepping by 1 and keeping every other
// axis whole; nullopt for any other slice, or one whose arguments are not plan-time constants.
std::optional<std::pair<int64_t, int64_t>> last_axis_range(const FusionContext& ctx, const Node& s, const Dims& x) {
  for (size_t i = 1; i < s.inputs.size(); ++i)
    if (s.inputs[i] >= 0 && !ctx.constant(s.inputs[i])) return std::nullopt;
  SliceSpec spec;
  try {
    spec = resolve_slice_node(s, x, [&](size_t i) { return i < s.inputs.size() && s.inputs[i] >= 0 ? ctx.constant(s.inputs[i]) : nullptr; });
  } catch (const Error&) {
    return std::nullopt;
  }
  for (size_t a = 0; a < x.size(); ++a)
    if (spec.step[a] != 1 || (a + 1 < x.size() && spec.out_dims[a] != x[a])) return std::nullopt;
  return std::pair{spec.start.back(), spec.start.back() + spec.out_dims.back()};
}

// Whether `v`'s type is float32 and broadcasts against x's dims without growing them, with the
// head dim D as its own last dim: cos and sin are tables per position (and per head or batch).
bool is_table(const FusionContext& ctx, int v, const Dims& x) {
  const TensorType& t = ctx.type(v);
  if (t.dtype != DType::Float32 || t.dims.empty() || t.dims.size() > x.size() || t.dims.back() != x.back()) return false;
  for (size_t i = 1; i <= t.dims.size(); ++i)
    if (t.dims[t.dims.size() - i] != 1 && t.dims[t.dims.size() - i] != x[x.size() - i]) return false;
  return true;
}

// From the Neg of x's upper half.
Result match_rotary(const FusionContext& ctx, int neg) {
  const int upper = match::producer_of(ctx, ctx.node(neg).inputs[0], Op::Slice);
  if (upper < 0) return std::string("the negated value is not a Slice");
  RotaryMatch m;
  m.x = ctx.node(upper).inputs[0];
  const TensorType& xt = ctx.type(m.x);
  if (xt.dtype != DType::Float32) return std::string("x is not float32");
  if (xt.dims.empty() || xt.dims.back() < 2 || xt.dims.back() % 2 != 0) return std::string("x's last dim is not even");
  const int64_t dim = xt.dims.back(), half = dim / 2;
  if (last_axis_range(ctx, ctx.node(upper), xt.dims) != std::pair{half, dim})
    return std::string("the negated slice is not the upper half of x's last axis");
  const int cat = match::only_consumer(ctx, ctx.node(neg).outputs[0], Op::Concat);
  if (cat < 0) return std::string("the negated half is not concatenated");
  const Node& c = ctx.node(cat);
  if (c.inputs.size() != 2 || c.inputs[0] != ctx.node(neg).outputs[0])
    return std::string("the concat is not (-upper half, lower half)");
  const int64_t axis = c.attr_int("axis", 0);
  if (axis != -1 && axis != static_cast<int64_t>(xt.dims.size()) - 1) return std::string("the concat is not along the last axis");
  const int lower = match::producer_of(ctx, c.inputs[1], Op::Slice);
  if (lower < 0 || ctx.node(lower).inputs[0] != m.x ||
      last_axis_range(ctx, ctx.node(lower), xt.dims) != std::pair{int64_t{0}, half})
    return std::string("the concat's second part is not the lower half of x");
  // rotate_half(x) * sin + x * cos, each product in either operand order.
  const int rotated = c.outputs[0];
  const int by_sin = match::only_consumer(ctx, rotated, Op::Mul);
  if (by_sin < 0) return std::string("rotate_half(x) is not multiplied");
  m.sin = match::other_input(ctx.node(by_sin), rotated);
  if (m.sin == rotated) return std::string("rotate_half(x) is squared, not multiplied by a table");
  const int add = match::only_consumer(ctx, ctx.node(by_sin).outputs[0], Op::Add);
  if (add < 0) return std::string("rotate_half(x) * sin is not added");
  const int by_cos = match::producer_of(ctx, match::other_input(ctx.node(add), ctx.node(by_sin).outputs[0]), Op::Mul);
  if (by_cos < 0 || by_cos == by_sin) return std::string("rotate_half(x) * sin is not added to another product");
  m.cos = match::other_input(ctx.node(by_cos), m.x);
  if (m.cos < 0) return std::string("rotate_half(x) * sin is not added to x times a table");
  if (!is_table(ctx, m.cos, xt.dims) || !is_table(ctx, m.sin, xt.dims) || ctx.type(m.cos).dims != ctx.type(m.sin).dims)
    return std::string("cos and sin are not float32 tables of one shape, ending in x's last dim, that x's shape covers");
  m.nodes = {upper, lower, neg, cat, by_sin, by_cos, add};
  return m;
}

}  // namespace

void fuse_rotary(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    if (ctx.node(i).op != Op::Neg) continue;
    Result r = match_rotary(ctx, i);
    if (auto* why = std::get_if<std::string>(&r)) {
      ctx.decline(kPass, {i}, *why);
      continue;
    }
    auto& m = std::get<RotaryMatch>(r);
    // The fused node replaces nodes before i (the slices): rescan.
    if (ctx.fuse(kPass, m.nodes, FusedKind::Rotary, "rotary", {}, {}, {m.x, m.cos, m.sin})) i = -1;
  }
}

}  // namespace fusor::passes
