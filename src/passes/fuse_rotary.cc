// Rotary position embedding in the rotate-half form, as transformers exports LLaMA, Mistral,
// Qwen2 and GPT-NeoX attention:
//   y = x * cos + Concat(-x[..., h:], x[..., :h]) * sin        h = D / 2, D = x's last dim
// i.e. Slice, Slice, Neg, Concat, Mul, Mul, Add -> one Rotary node with inputs x, cos, sin. Its
// kernel reads x once and writes y once; unfused, the five kernels wrote and read back four
// intermediates of x's size per query and key tensor of every layer. Every part of the form is
// checked (the halves, their order, the signs, which product takes which table), so a look-alike
// (the interleaved GPT-J form, a partial rotary on a prefix of the head) is declined with why.
#include <algorithm>

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

// One element of a Slice parameter: its input (opset 10 on) or attribute (before), with the
// default when it is absent; nullopt when it is not a one-element plan-time constant.
std::optional<int64_t> slice_param(const FusionContext& ctx, const Node& s, size_t input, const char* attr,
                                   std::optional<int64_t> absent) {
  if (s.opset < 10) {
    if (!s.has_attr(attr)) return absent;
    const std::vector<int64_t> v = s.attr_ints(attr);
    return v.size() == 1 ? std::optional<int64_t>(v[0]) : std::nullopt;
  }
  if (s.inputs.size() <= input || s.inputs[input] < 0) return absent;
  const Tensor* t = ctx.constant(s.inputs[input]);
  if (!t || t->numel() != 1 || (t->dtype() != DType::Int64 && t->dtype() != DType::Int32)) return std::nullopt;
  return t->to_int64_vector()[0];
}

// The [begin, end) of the last axis (of `dim` elements) that Slice `s` keeps, with step 1 and
// the other axes whole; nullopt for any other slice.
std::optional<std::pair<int64_t, int64_t>> last_axis_range(const FusionContext& ctx, const Node& s, int64_t dim,
                                                            size_t rank) {
  const auto begin = slice_param(ctx, s, 1, "starts", std::nullopt);
  const auto end = slice_param(ctx, s, 2, "ends", std::nullopt);
  const auto axis = slice_param(ctx, s, 3, "axes", int64_t{0});
  const auto step = slice_param(ctx, s, 4, "steps", int64_t{1});
  if (!begin || !end || !axis || !step || *step != 1) return std::nullopt;
  if ((*axis < 0 ? *axis + static_cast<int64_t>(rank) : *axis) != static_cast<int64_t>(rank) - 1) return std::nullopt;
  auto clamp = [dim](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + dim : i, 0, dim); };
  return std::pair{clamp(*begin), clamp(*end)};
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
  if (last_axis_range(ctx, ctx.node(upper), dim, xt.dims.size()) != std::pair{half, dim})
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
      last_axis_range(ctx, ctx.node(lower), dim, xt.dims.size()) != std::pair{int64_t{0}, half})
    return std::string("the concat's second part is not the lower half of x");
  // rotate_half(x) * sin + x * cos, each product in either operand order.
  const int rotated = c.outputs[0];
  const int by_sin = match::only_consumer(ctx, rotated, Op::Mul);
  if (by_sin < 0) return std::string("rotate_half(x) is not multiplied");
  m.sin = match::other_input(ctx.node(by_sin), rotated);
  const int add = match::only_consumer(ctx, ctx.node(by_sin).outputs[0], Op::Add);
  if (add < 0) return std::string("rotate_half(x) * sin is not added");
  const int by_cos = match::producer_of(ctx, match::other_input(ctx.node(add), ctx.node(by_sin).outputs[0]), Op::Mul);
  if (by_cos < 0) return std::string("rotate_half(x) * sin is not added to a product");
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
