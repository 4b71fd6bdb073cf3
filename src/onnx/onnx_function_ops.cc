// ONNX's own ops of opsets 23 and 24 that older ops compute (see onnx_function_ops.h). Each is
// expanded in the form a plain export has, so the passes that fuse a plain model fuse these too:
// Attention as Q K^T -> scale -> causal Where -> mask -> Softmax -> P V (fuse_attention, and the
// decoder's KV-cache rewrite, which checks the form by evaluating it).
#include "onnx/onnx_function_ops.h"

#include <cmath>
#include <limits>

#include "onnx/contrib_attention.h"

namespace fusor::contrib {
namespace {

using Ints = std::vector<int64_t>;
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool is_float32(DType t) { return t == DType::Float32 || t == DType::Undefined; }

// x in float32 (fusor's expansions compute in float32; a float16 op gets Casts around it).
std::string as_float(NodeBuilder& b, const std::string& x, DType t) { return is_float32(t) ? x : b.cast(x, kFloat); }

// y, computed in float32, written as `like`'s type (dtype `t`) to `out`.
void as_type_of(NodeBuilder& b, const std::string& y, const std::string& like, DType t, const std::string& out) {
  b.add(is_float32(t) ? "Identity" : "CastLike", is_float32(t) ? std::vector<std::string>{y} : std::vector<std::string>{y, like}, {}, out);
}

// [B,S,n*D] -> [B,n,S,D].
std::string heads_first(NodeBuilder& b, const std::string& x, int64_t n) {
  auto r = b.add("Reshape", {x, b.ints({0, 0, n, -1})});
  return b.add("Transpose", {r}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})});
}

// The head counts of Q and of K/V: the attributes for 3-D inputs, dim 1 of 4-D ones (-1 when
// the import does not know them).
std::pair<int64_t, int64_t> head_counts(ContribExpander& ex, NodeBuilder& b, size_t rank) {
  if (rank == 3) {
    const int64_t q = b.attr_int("q_num_heads", 0), kv = b.attr_int("kv_num_heads", 0);
    if (q <= 0 || kv <= 0) b.invalid("3-D inputs need positive q_num_heads and kv_num_heads");
    return {q, kv};
  }
  auto qs = ex.shape_of(b.in(0)), ks = ex.shape_of(b.in(1));
  const bool known = qs && ks && qs->size() == 4 && ks->size() == 4 && (*qs)[1] > 0 && (*ks)[1] > 0;
  return known ? std::pair{(*qs)[1], (*ks)[1]} : std::pair{int64_t{-1}, int64_t{-1}};
}

// [B,kv,S,D] -> [B,q_heads,S,D], each KV head serving q_heads / kv_heads query heads; from the
// shapes at run time when the import does not know the head counts (-1).
std::string repeat_heads(NodeBuilder& b, const std::string& x, const std::string& q, int64_t q_heads, int64_t kv_heads) {
  if (q_heads > 0 && (q_heads == kv_heads || kv_heads == 1)) return x;  // one KV head: the MatMuls broadcast it
  auto axis0 = NodeBuilder::attr("axis", int64_t{0});
  auto dims = [&](const std::string& v, int64_t from, int64_t to) {
    return b.add("Slice", {b.add("Shape", {v}), b.ints({from}), b.ints({to})});
  };
  std::string group = q_heads > 0 ? b.ints({q_heads / kv_heads}) : b.add("Div", {dims(q, 1, 2), dims(x, 1, 2)});
  std::string heads = q_heads > 0 ? b.ints({q_heads}) : dims(q, 1, 2);
  auto e = b.add("Expand", {b.unsqueeze(x, {2}), b.add("Concat", {b.ints({1, 1}), group, b.ints({1, 1})}, {axis0})});
  return b.add("Reshape", {e, b.add("Concat", {b.ints({0}), heads, dims(x, 2, 4)}, {axis0})});
}

// 1 / sqrt(head size): a constant when the import knows Q's last dim, else computed from the
// shape of `q` ([B,H,S,D]) at run time.
std::string default_scale(ContribExpander& ex, NodeBuilder& b, const std::string& q, size_t rank, int64_t q_heads) {
  auto qs = ex.shape_of(b.in(0));
  const int64_t last = qs && !qs->empty() ? qs->back() : -1;
  if (last > 0 && rank == 3 && q_heads > 0 && last % q_heads)
    b.invalid("Q's width " + std::to_string(last) + " does not split into q_num_heads");
  if (last > 0 && (rank == 4 || q_heads > 0))
    return b.scalar(1.0f / std::sqrt(static_cast<float>(rank == 3 ? last / q_heads : last)));
  return b.add("Reciprocal", {b.add("Sqrt", {b.cast(b.dim_scalar(q, 3), kFloat)})});
}

// Key j of `keys` is seen from query i of `queries` when j <= i + offset (bottom-right causal);
// `offset` is a scalar, or [B,1,1,1] per batch row.
std::string causal_seen(NodeBuilder& b, const std::string& queries, const std::string& keys, const std::string& offset) {
  auto i = b.unsqueeze(b.arange(queries), {1});
  auto j = b.unsqueeze(b.arange(keys), {0});
  return b.add("Not", {b.add("Greater", {j, b.add("Add", {i, offset})})});
}

}  // namespace

// Attention (opsets 23 and 24), as ONNX 1.23 states it and ONNX Runtime computes it: softcap
// before the mask, causal masks aligned bottom-right, and a query row that sees no key gives
// zeros. Scores are scaled after Q K^T (the spec scales Q and K by sqrt(scale) each; the product
// differs in rounding only), which is the form fusor's attention fusion matches.
void onnx_attention(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1, 2});
  b.expect_inputs(3, 7);
  const bool past = b.has_in(4) || b.has_in(5);
  if (past && !(b.has_in(4) && b.has_in(5))) b.invalid("past_key and past_value come together");
  if (past && b.has_in(6)) b.invalid("nonpad_kv_seqlen is not used with past_key and past_value");
  auto qs = ex.shape_of(b.in(0));
  if (!qs || (qs->size() != 3 && qs->size() != 4)) b.unsupported("the rank of Q (3 or 4) is not known at import");
  const size_t rank = qs->size();
  const auto [q_heads, kv_heads] = head_counts(ex, b, rank);
  if (q_heads > 0 && q_heads % kv_heads) b.invalid("q_num_heads must be a multiple of kv_num_heads");
  const float scale = b.attr_float("scale", 0.0f);
  const int64_t mode = b.attr_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) b.invalid("qk_matmul_output_mode must be 0 to 3");

  const DType t = ex.type_of(b.in(0));
  auto q = rank == 3 ? heads_first(b, b.in(0), q_heads) : b.in(0);
  auto k = rank == 3 ? heads_first(b, b.in(1), kv_heads) : b.in(1);
  auto v = rank == 3 ? heads_first(b, b.in(2), kv_heads) : b.in(2);
  auto axis2 = NodeBuilder::attr("axis", int64_t{2});
  if (past) {
    k = b.add("Concat", {b.in(4), k}, {axis2}, b.out(1));
    v = b.add("Concat", {b.in(5), v}, {axis2}, b.out(2));
  } else {
    if (b.has_out(1)) b.add("Identity", {k}, {}, b.out(1));
    if (b.has_out(2)) b.add("Identity", {v}, {}, b.out(2));
  }
  q = as_float(b, q, t);
  k = as_float(b, k, t);
  v = as_float(b, v, ex.type_of(b.in(2)));
  k = repeat_heads(b, k, q, q_heads, kv_heads);
  v = repeat_heads(b, v, q, q_heads, kv_heads);
  auto kt = b.add("Transpose", {k}, {NodeBuilder::attr("perm", Ints{0, 1, 3, 2})});
  auto scores = b.add("Mul", {b.add("MatMul", {q, kt}), scale != 0.0f ? b.scalar(scale) : default_scale(ex, b, q, rank, q_heads)});
  std::string qk = mode == 0 ? scores : "";
  if (const float cap = b.attr_float("softcap", 0.0f); cap > 0.0f)
    scores = b.add("Mul", {b.add("Tanh", {b.add("Div", {scores, b.scalar(cap)})}), b.scalar(cap)});
  if (mode == 1) qk = scores;

  // The keys a query may see: a boolean mask, the causal frontier, nonpad_kv_seqlen.
  std::string seen;
  auto both = [&](const std::string& a) { seen = seen.empty() ? a : b.add("And", {seen, a}); };
  auto total = b.dim_scalar(k, 2);
  // With nonpad_kv_seqlen, a mask's key axis may be shorter than the keys: the rest are not seen.
  auto pad_keys = [&](const std::string& m, const std::string& fill) {
    if (!b.has_in(6)) return m;
    auto ms = ex.shape_of(b.in(3));
    if (!ms || ms->empty()) b.unsupported("the rank of attn_mask is not known at import");
    const auto r = static_cast<int64_t>(ms->size());
    auto short_by = b.add("Sub", {b.dim(k, 2), b.dim(m, r - 1)});
    auto pads = b.add("Concat", {b.ints(Ints(static_cast<size_t>(2 * r - 1), 0)), short_by},
                      {NodeBuilder::attr("axis", int64_t{0})});
    return b.add("Pad", {m, pads, fill});
  };
  std::string bias;
  if (b.has_in(3)) {
    const DType mt = ex.type_of(b.in(3));
    if (mt == DType::Undefined) b.unsupported("the element type of attn_mask is not known at import");
    if (mt == DType::Bool) {
      both(pad_keys(b.in(3), b.add("Cast", {b.scalar_i64(0)}, {NodeBuilder::attr("to", int64_t{onnx::TensorProto::BOOL})})));
    } else {
      bias = pad_keys(as_float(b, b.in(3), mt), b.scalar(kNegInf));
    }
  }
  std::string lengths;
  if (b.has_in(6)) lengths = b.unsqueeze(b.in(6), {1, 2, 3});  // [B,1,1,1]
  if (b.attr_int("is_causal", 0)) {
    auto queries = b.dim_scalar(q, 2);
    std::string offset = past ? b.dim_scalar(b.in(4), 2)
                              : (lengths.empty() ? b.scalar_i64(0) : b.add("Sub", {lengths, queries}));
    both(causal_seen(b, queries, total, offset));
  }
  if (!lengths.empty()) both(b.add("Less", {b.unsqueeze(b.arange(total), {0}), lengths}));
  if (!seen.empty()) scores = b.add("Where", {seen, scores, b.scalar(kNegInf)});
  if (!bias.empty()) scores = b.add("Add", {scores, bias});
  if (mode == 2) qk = scores;
  auto probs = b.add("Softmax", {scores}, {NodeBuilder::attr("axis", int64_t{-1})});
  if (b.has_in(3) || b.has_in(6)) {
    // A row that sees no key (a boolean mask, a float mask of -inf, or more queries than valid
    // keys) gives zeros. From the masks alone, so that the guard is known wherever they are.
    std::string allowed = seen;
    if (!bias.empty()) {
      auto finite = b.add("Greater", {bias, b.scalar(kNegInf)});
      allowed = allowed.empty() ? finite : b.add("And", {allowed, finite});
    }
    auto any = b.add("ReduceMax", {b.cast(allowed, kFloat), b.ints({-1})}, {NodeBuilder::attr("keepdims", int64_t{1})});
    probs = b.add("Where", {b.cast(any, onnx::TensorProto::BOOL), probs, b.scalar(0.0f)});
  }
  if (mode == 3) qk = probs;
  const std::string y_out = is_float32(t) ? b.out(0) : "";
  auto y = b.add("MatMul", {probs, v}, {}, rank == 4 ? y_out : "");
  if (rank == 3) {
    auto heads = b.add("Transpose", {y}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})});
    y = b.add("Reshape", {heads, b.ints({0, 0, -1})}, {}, y_out);
  }
  if (!is_float32(t)) b.add("CastLike", {y, b.in(0)}, {}, b.out(0));
  if (b.has_out(3)) as_type_of(b, qk, b.in(0), t, b.out(3));
  ex.set_rank(b.out(0), rank);
}

// RMSNormalization (opset 23): x / sqrt(mean(x^2) + epsilon) * scale over the axes from `axis`,
// computed in float32 (stash_type 1, the default).
void onnx_rms_normalization(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1});
  b.expect_inputs(2, 2);
  if (b.attr_int("stash_type", 1) != 1) b.unsupported("stash_type other than 1 (float32) is not supported");
  auto shape = ex.shape_of(b.in(0));
  auto axes = trailing_axes(b, b.attr_int("axis", -1), shape ? std::optional<size_t>(shape->size()) : std::nullopt);
  const DType t = ex.type_of(b.in(0));
  const float eps = b.attr_float("epsilon", 1e-5f);
  if (is_float32(t) && is_float32(ex.type_of(b.in(1)))) {
    rms_norm(b, b.in(0), b.in(1), eps, axes, b.out(0));
  } else {  // normalized in float32, scaled in the input's type
    auto normed = rms_norm(b, as_float(b, b.in(0), t), "", eps, axes, "");
    b.add("Mul", {b.add("CastLike", {normed, b.in(0)}), b.in(1)}, {}, b.out(0));
  }
  if (shape) ex.set_rank(b.out(0), shape->size());
}

// RotaryEmbedding (opset 23): X [B,N,S,D] or [B,S,N*D]; cos/sin [P, rd/2] read at position_ids
// [B,S], or [B,S,rd/2] without them.
void onnx_rotary_embedding(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1, 2});
  b.expect_inputs(3, 4);
  auto xs = ex.shape_of(b.in(0));
  if (!xs || (xs->size() != 3 && xs->size() != 4)) b.unsupported("the input's rank (3 or 4) is not known at import");
  const bool four_d = xs->size() == 4;
  const int64_t heads = b.attr_int("num_heads", 0);
  if (!four_d && heads <= 0) b.invalid("a 3-D input needs num_heads");
  int64_t d = four_d ? xs->back() : (xs->back() > 0 ? xs->back() / heads : -1);
  int64_t rd = b.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) {
    auto cs = ex.shape_of(b.in(1));
    if (d < 0 && cs && !cs->empty() && cs->back() > 0) d = 2 * cs->back();
    if (d < 0) b.unsupported("the head size is not known at import");
    rd = d;
  }
  if (rd <= 0 || rd % 2) b.invalid("rotary_embedding_dim must be positive and even");
  const DType t = ex.type_of(b.in(0));
  // In [B,S,N,D], where cos and sin [B,S,rd/2] broadcast once unsqueezed at axis 2.
  std::string x = four_d ? b.add("Transpose", {b.in(0)}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})})
                         : b.add("Reshape", {b.in(0), b.ints({0, 0, heads, -1})});
  x = as_float(b, x, t);
  auto rows = [&](size_t i) {
    auto c = b.has_in(3) ? b.add("Gather", {b.in(i), b.in(3)}) : b.in(i);
    return b.unsqueeze(as_float(b, c, t), {2});
  };
  auto y = rotate(b, x, rows(1), rows(2), rd, b.attr_int("interleaved", 0) != 0, d < 0 || rd < d, "");
  y = four_d ? b.add("Transpose", {y}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})})
             : b.add("Reshape", {y, b.ints({0, 0, -1})});
  as_type_of(b, y, b.in(0), t, b.out(0));
  ex.set_shape(b.out(0), *xs);
}

// Swish (opset 24): x * sigmoid(alpha * x).
void onnx_swish(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0});
  b.expect_inputs(1, 1);
  const DType t = ex.type_of(b.in(0));
  auto x = as_float(b, b.in(0), t);
  const float alpha = b.attr_float("alpha", 1.0f);
  auto s = b.add("Sigmoid", {alpha == 1.0f ? x : b.add("Mul", {x, b.scalar(alpha)})});
  auto y = b.add("Mul", {x, s}, {}, is_float32(t) ? b.out(0) : "");
  if (!is_float32(t)) b.add("CastLike", {y, b.in(0)}, {}, b.out(0));
}

// TensorScatter (opset 24): the cache with `update` written along `axis` from write_indices[b]
// (0 without them), wrapping around the axis in mode "circular". A ScatterElements whose indices
// are write_indices[b] + s at every position of the update.
void onnx_tensor_scatter(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1});
  b.expect_inputs(2, 3);
  auto shape = ex.shape_of(b.in(0));
  if (!shape) b.unsupported("the rank of past_cache is not known at import");
  const auto rank = static_cast<int64_t>(shape->size());
  int64_t axis = b.attr_int("axis", -2);
  if (axis < 0) axis += rank;
  if (axis <= 0 || axis >= rank) b.invalid("axis must name a dim after the batch dim");
  const std::string mode = b.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") b.invalid("mode must be 'linear' or 'circular'");
  Ints along_axis, along_batch;
  for (int64_t a = 0; a < rank; ++a) {
    if (a != axis) along_axis.push_back(a);
    if (a != 0) along_batch.push_back(a);
  }
  auto index = b.unsqueeze(b.arange(b.dim_scalar(b.in(1), axis)), along_axis);  // s along `axis`
  if (b.has_in(2)) index = b.add("Add", {index, b.unsqueeze(b.in(2), along_batch)});
  if (mode == "circular") index = b.add("Mod", {index, b.dim_scalar(b.in(0), axis)});
  index = b.add("Expand", {index, b.add("Shape", {b.in(1)})});
  b.add("ScatterElements", {b.in(0), index, b.in(1)}, {NodeBuilder::attr("axis", axis)}, b.out(0));
  ex.set_rank(b.out(0), shape->size());
}

}  // namespace fusor::contrib
