// Attention from its exported form (BERT, GPT-2):
//   Q, K, V [B,S,H*D] -> Reshape [B,S,H,D] -> Transpose (Q, V: [0,2,1,3]; K: [0,2,3,1], or two
//   Transposes that compose to it) -> MatMul(Q, K^T) -> scale (Div or Mul by a scalar) ->
//   optional Where(causal condition, scores, fill) -> optional Add(mask) -> Softmax(last axis) ->
//   MatMul(., V) -> Transpose [0,2,1,3] -> Reshape [B,S,H*D].
// The fused node reads Q, K, V in the projections' layout (the Reshapes and Transposes become
// strides) and the additive mask as it is ([B,1,1,Sk] padding, or anything broadcastable).
// The match starts at a Softmax whose input comes from a MatMul through scale/mask ops; from
// there every assumption (perms, reshape targets, heads, softmax axis, scale, mask broadcast,
// causal condition) is checked and a near miss is declined with its reason.
//
// Reshape targets come from Shape/Gather/Concat subgraphs that fold at plan time. Those that
// read the pattern's own values join the fused node's body; the rest stay outside as inputs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "passes/match.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_attention";
constexpr int kMaxScoreOps = 4;  // scale, Where, Add, and one more scale

struct AttentionMatch {
  std::vector<int> nodes;
  int q = -1, k = -1, v = -1, mask = -1;
  int64_t heads = 0, head_dim = 0;
  double scale = 1.0;
  bool causal = false;
  float fill = -std::numeric_limits<float>::infinity();
};

using Result = std::variant<AttentionMatch, std::string>;

std::string perm_string(const std::vector<int64_t>& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? "," : "") + std::to_string(p[i]);
  return s + "]";
}

// Follows `value` back through Transposes to a Reshape of a [B,S,H*D] tensor into [B,S,H,D];
// `want` is the composed permutation the operand must have. Adds the nodes it passes.
std::optional<std::string> head_split(const FusionContext& ctx, int value, const std::vector<int64_t>& want,
                                      const char* what, AttentionMatch& m, int& source, Dims& split) {
  std::vector<int64_t> perm = {0, 1, 2, 3};
  int t;
  while ((t = match::producer_of(ctx, value, Op::Transpose)) >= 0) {
    std::vector<int64_t> p = ctx.node(t).attr_ints("perm");
    if (p.size() != 4) return std::string(what) + " is transposed with a perm of rank " + std::to_string(p.size());
    std::vector<int64_t> composed(4);
    for (size_t i = 0; i < 4; ++i) composed[i] = p[static_cast<size_t>(perm[i])];
    perm = composed;
    m.nodes.push_back(t);
    value = ctx.node(t).inputs[0];
  }
  if (perm != want) return std::string(what) + " is transposed by " + perm_string(perm) + ", not " + perm_string(want);
  int r = match::producer_of(ctx, value, Op::Reshape);
  if (r < 0) return std::string(what) + " is not a reshaped [B,S,H*D] tensor";
  source = ctx.node(r).inputs[0];
  const Dims& in = ctx.type(source).dims;
  split = ctx.type(value).dims;
  if (ctx.type(source).dtype != DType::Float32) return std::string(what) + " is not float32";
  if (in.size() != 3 || split.size() != 4 || in[0] != split[0] || in[1] != split[1] || in[2] != split[2] * split[3])
    return std::string(what) + " reshape " + dims_to_string(in) + " -> " + dims_to_string(split) +
           " does not split the last axis into heads";
  if (!ctx.constant(ctx.node(r).inputs[1])) return std::string(what) + " reshape target is not known at plan time";
  m.nodes.push_back(r);
  return std::nullopt;
}

// Is `cond` (broadcastable to [Sq,Sk]) true exactly where key j may be seen from query i
// (j <= i + Sk - Sq)? `masked_when_true` flips it (masked_fill's condition).
bool is_causal(const Tensor& cond, int64_t sq, int64_t sk, bool masked_when_true) {
  const Dims& d = cond.dims();
  if (d.size() < 2 || d[d.size() - 2] != sq || d.back() != sk || cond.numel() != sq * sk) return false;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j)
      if ((cond.scalar_as_double(i * sk + j) != 0) != ((j <= i + sk - sq) != masked_when_true)) return false;
  return true;
}

// The ops between the scores MatMul and the Softmax, from the Softmax back; empty when `value`
// does not reach a MatMul through scale, Where and Add within kMaxScoreOps steps.
bool score_path(const FusionContext& ctx, int value, std::vector<int>& path, int depth = 0) {
  const int p = value >= 0 ? ctx.graph().values[static_cast<size_t>(value)].producer : -1;
  if (p < 0 || depth > kMaxScoreOps) return false;
  const Node& n = ctx.node(p);
  path.push_back(p);
  if (n.op == Op::MatMul) return true;
  if ((n.op == Op::Div && match::scalar(ctx, n.inputs[1])) ||
      (n.op == Op::Mul && (match::scalar(ctx, n.inputs[0]) || match::scalar(ctx, n.inputs[1])))) {
    int x = match::scalar(ctx, n.inputs[1]) ? n.inputs[0] : n.inputs[1];
    if (score_path(ctx, x, path, depth + 1)) return true;
  } else if (n.op == Op::Add || n.op == Op::Where) {
    for (size_t i = n.op == Op::Where ? 1 : 0; i < n.inputs.size(); ++i)
      if (score_path(ctx, n.inputs[i], path, depth + 1)) return true;
  }
  path.pop_back();
  return false;
}

// The one Reshape of `value` when every other consumer folds at plan time (BERT takes the
// Reshape's target from Shape of the same value); -1 otherwise.
int reshape_consumer(const FusionContext& ctx, int value) {
  const auto& outs = ctx.graph().outputs;
  if (std::find(outs.begin(), outs.end(), value) != outs.end()) return -1;
  int reshape = -1;
  for (int c : ctx.consumers(value)) {
    const Node& n = ctx.node(c);
    if (n.op == Op::Reshape && n.inputs[0] == value && reshape < 0) reshape = c;
    else if (!ctx.binding().folded(n)) return -1;
  }
  return reshape;
}

Result match_at(const FusionContext& ctx, int softmax, const std::vector<int>& path) {
  AttentionMatch m;
  const Node& sm = ctx.node(softmax);
  const int scores_mm = path.back();
  const Dims& sd = ctx.type(sm.inputs[0]).dims;
  if (ctx.type(sm.inputs[0]).dtype != DType::Float32) return std::string("scores are not float32");
  if (sd.size() != 4) return "scores have rank " + std::to_string(sd.size()) + ", not [B,H,Sq,Sk]";
  int64_t axis = sm.attr_int("axis", sm.opset >= 13 ? -1 : 1);
  if (axis < 0) axis += 4;
  if (axis != 3) return "softmax over axis " + std::to_string(axis) + ", not the key axis (3)";
  const int pv = match::only_consumer(ctx, sm.outputs[0], Op::MatMul);
  if (pv < 0 || ctx.node(pv).inputs[0] != sm.outputs[0])
    return std::string("the probabilities are not multiplied by V in one MatMul");

  // Q, K, V: heads split off the last axis, no copies.
  const Node& qk = ctx.node(scores_mm);
  Dims qs, ks, vs;
  if (auto why = head_split(ctx, qk.inputs[0], {0, 2, 1, 3}, "Q", m, m.q, qs)) return *why;
  if (auto why = head_split(ctx, qk.inputs[1], {0, 2, 3, 1}, "K", m, m.k, ks)) return *why;
  if (auto why = head_split(ctx, ctx.node(pv).inputs[1], {0, 2, 1, 3}, "V", m, m.v, vs)) return *why;
  if (qs[0] != ks[0] || qs[2] != ks[2] || qs[3] != ks[3] || ks != vs)
    return "Q " + dims_to_string(qs) + ", K " + dims_to_string(ks) + " and V " +
           dims_to_string(vs) + " do not share batch, heads and head size";
  m.heads = qs[2];
  m.head_dim = qs[3];
  const int64_t sq = qs[1], sk = ks[1];
  if (sd != Dims{qs[0], m.heads, sq, sk}) return "scores " + dims_to_string(sd) + " are broadcast beyond Q K^T";

  // Scale, causal Where and additive mask, in graph order (the path runs backwards).
  bool has_where = false;
  for (size_t i = path.size() - 1; i-- > 0;) {
    const Node& n = ctx.node(path[i]);
    const int x = ctx.node(path[i + 1]).outputs[0];
    if (n.op == Op::Div || n.op == Op::Mul) {
      if (m.mask >= 0) return std::string("the scores are scaled after the mask is added");
      const float c = static_cast<float>(*match::scalar(ctx, match::other_input(n, x)));
      m.scale *= n.op == Op::Div ? 1.0 / c : c;
      if (has_where) m.fill = n.op == Op::Div ? m.fill / c : m.fill * c;  // as the graph computes it
    } else if (n.op == Op::Where) {
      if (has_where || m.mask >= 0) return std::string("a Where after the additive mask or a second Where");
      const bool scores_first = n.inputs[1] == x;
      const int fill = n.inputs[scores_first ? 2 : 1];
      auto f = match::scalar(ctx, fill);
      if (!f) return std::string("the Where fill is not a scalar constant");
      const Tensor* cond = ctx.constant(n.inputs[0]);
      if (!cond) return std::string("the Where condition is not known at plan time");
      if (!is_causal(*cond, sq, sk, !scores_first))
        return "the Where condition " + dims_to_string(cond->dims()) + " is not a causal mask";
      m.causal = has_where = true;
      m.fill = static_cast<float>(*f);
    } else if (n.op == Op::Add) {
      if (m.mask >= 0) return std::string("more than one mask is added to the scores");
      m.mask = match::other_input(n, x);
      const TensorType& mt = ctx.type(m.mask);
      if (mt.dtype != DType::Float32) return std::string("the mask is not float32");
      const Dims full = {qs[0], m.heads, sq, sk};
      bool fits = mt.dims.size() <= 4;
      for (size_t a = 0; fits && a < mt.dims.size(); ++a) {
        int64_t dim = mt.dims[mt.dims.size() - 1 - a];
        fits = dim == 1 || dim == full[3 - a];
      }
      if (!fits) return "the mask " + dims_to_string(mt.dims) + " does not broadcast to [B,H,Sq,Sk]";
    }
    m.nodes.push_back(path[i]);
  }
  m.nodes.push_back(scores_mm);
  m.nodes.push_back(softmax);
  m.nodes.push_back(pv);

  // Back to [B,Sq,H*D].
  int out = ctx.node(pv).outputs[0];
  int t = match::only_consumer(ctx, out, Op::Transpose);
  if (t < 0 || ctx.node(t).attr_ints("perm") != std::vector<int64_t>{0, 2, 1, 3})
    return std::string("the output is not transposed back by [0,2,1,3]");
  int r = reshape_consumer(ctx, ctx.node(t).outputs[0]);
  if (r < 0 || ctx.type(ctx.node(r).outputs[0]).dims != Dims{qs[0], sq, m.heads * m.head_dim})
    return std::string("the output is not reshaped back to [B,S,H*D]");
  m.nodes.push_back(t);
  m.nodes.push_back(r);
  std::set<int> unique(m.nodes.begin(), m.nodes.end());  // K and V may share a Reshape
  m.nodes.assign(unique.begin(), unique.end());
  return m;
}

// Stores the set's plan-time inputs (reshape targets, scale, causal condition) as constants and
// replaces folded nodes outside the set that read its values (Shape) by their values. Returns
// whether the graph changed; node indices are then invalid.
// Shape subgraphs that read a value inside the pattern (BERT's output Reshape takes its target
// from Shape of the transposed product) join the group, when all they compute is used inside it:
// otherwise that value would look used outside the fused node. Everything stays symbolic, so the
// fused graph still runs at any batch and sequence length (fusor optimize writes it as is).
void absorb_shape_readers(const FusionContext& ctx, AttentionMatch& m) {
  const Graph& g = ctx.graph();
  const Binding& b = ctx.binding();
  std::set<int> in_set(m.nodes.begin(), m.nodes.end()), extra;
  std::vector<int> frontier;
  for (int n : m.nodes)
    for (int v : ctx.node(n).outputs)
      if (v >= 0) frontier.push_back(v);
  while (!frontier.empty()) {
    int v = frontier.back();
    frontier.pop_back();
    if (extra.size() > 64) return;
    for (int c : ctx.consumers(v)) {
      if (in_set.count(c) || extra.count(c) || !b.folded(ctx.node(c))) continue;  // real readers stay out
      extra.insert(c);
      for (int o : ctx.node(c).outputs)
        if (o >= 0) frontier.push_back(o);
    }
  }
  for (int n : extra)  // everything the absorbed nodes compute must be used inside the group
    for (int o : ctx.node(n).outputs) {
      if (o < 0) continue;
      if (std::find(g.outputs.begin(), g.outputs.end(), o) != g.outputs.end()) return;
      for (int c : ctx.consumers(o))
        if (!in_set.count(c) && !extra.count(c)) return;
    }
  m.nodes.insert(m.nodes.end(), extra.begin(), extra.end());
}

}  // namespace

void fuse_attention(FusionContext& ctx) {
  for (int i = 0; i < static_cast<int>(ctx.graph().nodes.size()); ++i) {
    if (ctx.node(i).op != Op::Softmax) continue;
    std::vector<int> path;
    if (!score_path(ctx, ctx.node(i).inputs[0], path)) continue;  // not the softmax of a product
    Result r = match_at(ctx, i, path);
    if (auto* m = std::get_if<AttentionMatch>(&r)) absorb_shape_readers(ctx, *m);
    if (auto* why = std::get_if<std::string>(&r)) {
      ctx.decline(kPass, {i}, *why);
      continue;
    }
    auto& m = std::get<AttentionMatch>(r);
    std::vector<int> leading = {m.q, m.k, m.v};
    if (m.mask >= 0) leading.push_back(m.mask);
    std::map<std::string, Attribute> attrs = {{"num_heads", m.heads},
                                              {"head_dim", m.head_dim},
                                              {"scale", static_cast<float>(m.scale)},
                                              {"causal", int64_t{m.causal}},
                                              {"fill", m.fill},
                                              {"mask", std::string(m.mask >= 0 ? "additive" : "none")}};
    // The fused node takes the output Reshape's place, after i: rescan from the start.
    if (ctx.fuse(kPass, m.nodes, FusedKind::Attention, "attention", std::move(attrs), {}, leading)) i = -1;
  }
}

}  // namespace fusor::passes
