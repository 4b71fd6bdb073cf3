// Each expansion follows ONNX Runtime's contrib op spec (docs/ContribOperators.md), written in
// the node forms fusor's fusion passes match (passes/fuse_*.cc), with constants as Constant nodes.
#include "onnx/contrib_ops.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

#include "onnx/contrib_builder.h"

namespace fusor {
namespace {

using contrib::NodeBuilder;
using Strings = std::vector<std::string>;
using Ints = std::vector<int64_t>;

constexpr float kSqrt2 = 1.41421356237f;
constexpr float kSqrt2OverPi = 0.7978845608f;
constexpr float kDefaultSkipEpsilon = 1e-12f;  // ORT's default for the Skip*/Embed* norms

// Trailing axes from `axis` to the last, as negative axes so that no rank is needed.
Ints trailing_axes(NodeBuilder& b, int64_t axis, std::optional<size_t> rank) {
  if (axis >= 0) {
    if (!rank) b.unsupported("a non-negative axis needs the input's rank, which is not known at import");
    if (axis >= static_cast<int64_t>(*rank)) b.invalid("axis " + std::to_string(axis) + " is out of range");
    axis -= static_cast<int64_t>(*rank);
  }
  Ints axes;
  for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  return axes;
}

// x * (1 + erf(x / sqrt(2))) * 0.5, as torch exports GELU.
void erf_gelu(NodeBuilder& b, const std::string& x, const std::string& out) {
  auto e = b.add("Erf", {b.add("Div", {x, b.scalar(kSqrt2)})});
  auto m = b.add("Mul", {x, b.add("Add", {e, b.scalar(1.0f)})});
  b.add("Mul", {m, b.scalar(0.5f)}, {}, out);
}

// x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) * 0.5.
void tanh_gelu(NodeBuilder& b, const std::string& x, const std::string& out) {
  auto cubic = b.add("Mul", {b.add("Pow", {x, b.scalar(3.0f)}), b.scalar(0.044715f)});
  auto t = b.add("Tanh", {b.add("Mul", {b.add("Add", {x, cubic}), b.scalar(kSqrt2OverPi)})});
  auto m = b.add("Mul", {x, b.add("Add", {t, b.scalar(1.0f)})});
  b.add("Mul", {m, b.scalar(0.5f)}, {}, out);
}

// LayerNorm over `axes` in the decomposed form of a torch export (fuse_layer_norm matches it),
// with the optional saved mean and 1/stddev.
void layer_norm(NodeBuilder& b, const std::string& x, const std::string& gamma, const std::string& beta, float eps,
                const Ints& axes, const std::string& out, const std::string& mean_out = "",
                const std::string& inv_std_out = "") {
  auto mean = b.reduce_mean(x, axes, mean_out);
  auto centered = b.add("Sub", {x, mean});
  auto var = b.reduce_mean(b.add("Pow", {centered, b.scalar(2.0f)}), axes);
  auto stddev = b.add("Sqrt", {b.add("Add", {var, b.scalar(eps)})});
  if (!inv_std_out.empty()) b.add("Reciprocal", {stddev}, {}, inv_std_out);
  auto normed = b.add("Div", {centered, stddev}, {}, gamma.empty() && beta.empty() ? out : "");
  if (gamma.empty() && beta.empty()) return;
  if (!gamma.empty()) normed = b.add("Mul", {normed, gamma}, {}, beta.empty() ? out : "");
  if (!beta.empty()) b.add("Add", {normed, beta}, {}, out);
}

// RMSNorm: x / sqrt(mean(x^2) + eps) * scale.
void rms_norm(NodeBuilder& b, const std::string& x, const std::string& scale, float eps, const Ints& axes,
              const std::string& out, const std::string& inv_std_out) {
  auto ms = b.reduce_mean(b.add("Pow", {x, b.scalar(2.0f)}), axes);
  auto rms = b.add("Sqrt", {b.add("Add", {ms, b.scalar(eps)})});
  if (!inv_std_out.empty()) b.add("Reciprocal", {rms}, {}, inv_std_out);
  b.add("Mul", {b.add("Div", {x, rms}), scale}, {}, out);
}

// input + bias + skip (bias first, as a projection's bias Add precedes the residual Add).
std::string skip_sum(NodeBuilder& b, size_t bias_input, const std::string& out) {
  auto x = b.in(0);
  if (b.has_in(bias_input)) x = b.add("Add", {x, b.in(bias_input)});
  return b.add("Add", {x, b.in(1)}, {}, out);
}

void require_inputs(NodeBuilder& b, std::initializer_list<size_t> required) {
  for (size_t i : required)
    if (!b.has_in(i)) b.invalid("input " + std::to_string(i) + " is required");
}

void forbid_outputs(NodeBuilder& b, size_t first, const char* why) {
  for (size_t i = first; i < 8; ++i)
    if (b.has_out(i)) b.unsupported("output " + std::to_string(i) + " (" + why + ") is not supported");
}

void forbid_inputs(NodeBuilder& b, size_t first, size_t last, const char* why) {
  for (size_t i = first; i <= last; ++i)
    if (b.has_in(i)) b.unsupported("input " + std::to_string(i) + " (" + why + ") is not supported");
}

// A scalar int64 dim of x (for Range).
std::string dim_scalar(NodeBuilder& b, const std::string& x, int64_t axis) {
  return b.add("Gather", {b.add("Shape", {x}), b.scalar_i64(axis)}, {NodeBuilder::attr("axis", int64_t{0})});
}

std::string arange(NodeBuilder& b, const std::string& limit) {
  return b.add("Range", {b.scalar_i64(0), limit, b.scalar_i64(1)});
}

std::string cast(NodeBuilder& b, const std::string& x, int to) {
  return b.add("Cast", {x}, {NodeBuilder::attr("to", int64_t{to})});
}

void fused_matmul(ContribExpander& ex, NodeBuilder& b) {
  require_inputs(b, {0, 1});
  if (b.attr_int("transBatchA", 0) || b.attr_int("transBatchB", 0))
    b.unsupported("transBatchA/transBatchB are not supported");
  auto operand = [&](size_t i, const char* trans) {
    if (!b.attr_int(trans, 0)) return b.in(i);
    auto shape = ex.shape_of(b.in(i));
    if (!shape) b.unsupported(std::string(trans) + " needs the rank of input " + std::to_string(i) + ", not known at import");
    if (shape->size() < 2) b.invalid(std::string(trans) + " on an input of rank " + std::to_string(shape->size()));
    Ints perm;
    for (int64_t a = 0; a < static_cast<int64_t>(shape->size()); ++a) perm.push_back(a);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return b.add("Transpose", {b.in(i)}, {NodeBuilder::attr("perm", perm)});
  };
  auto a = operand(0, "transA");
  auto c = operand(1, "transB");
  const float alpha = b.attr_float("alpha", 1.0f);
  auto y = b.add("MatMul", {a, c}, {}, alpha == 1.0f ? b.out(0) : "");
  if (alpha != 1.0f) b.add("Mul", {y, b.scalar(alpha)}, {}, b.out(0));
}

void skip_layer_norm(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0, 1, 2});
  auto sum = skip_sum(b, 4, b.out(3));
  layer_norm(b, sum, b.in(2), b.in(3), b.attr_float("epsilon", kDefaultSkipEpsilon), {-1}, b.out(0), b.out(1),
             b.out(2));
}

void simplified_layer_norm(ContribExpander& ex, NodeBuilder& b) {
  require_inputs(b, {0, 1});
  auto shape = ex.shape_of(b.in(0));
  auto axes = trailing_axes(b, b.attr_int("axis", -1), shape ? std::optional<size_t>(shape->size()) : std::nullopt);
  rms_norm(b, b.in(0), b.in(1), b.attr_float("epsilon", 1e-5f), axes, b.out(0), b.out(1));
}

void skip_simplified_layer_norm(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0, 1, 2});
  if (b.has_out(1)) b.unsupported("output 1 (mean) is not defined for the simplified norm");
  auto sum = skip_sum(b, 3, b.out(3));
  rms_norm(b, sum, b.in(2), b.attr_float("epsilon", kDefaultSkipEpsilon), {-1}, b.out(0), b.out(2));
}

void embed_layer_norm(ContribExpander& ex, NodeBuilder& b) {
  require_inputs(b, {0, 2, 3, 5, 6});
  if (b.has_in(1) != b.has_in(4)) b.invalid("segment_ids and segment_embedding come together");
  auto sum = b.add("Gather", {b.in(2), b.in(0)});
  if (b.has_in(1)) sum = b.add("Add", {sum, b.add("Gather", {b.in(4), b.in(1)})});
  // Positions 0..S-1 unless position_ids are given.
  auto pos = b.has_in(8) ? b.add("Gather", {b.in(3), b.in(8)})
                         : b.add("Slice", {b.in(3), b.ints({0}), b.dim(b.in(0), 1), b.ints({0})});
  sum = b.add("Add", {sum, pos}, {}, b.out(2));
  layer_norm(b, sum, b.in(5), b.in(6), b.attr_float("epsilon", kDefaultSkipEpsilon), {-1}, b.out(0));
  ex.set_rank(b.out(0), 3);
  if (b.has_out(2)) ex.set_rank(b.out(2), 3);
  if (!b.has_out(1)) return;
  // mask_index: the number of ones in each row of the mask (its valid length), zeros without one.
  if (b.has_in(7)) {
    b.add("ReduceSum", {b.in(7), b.ints({1})}, {NodeBuilder::attr("keepdims", int64_t{0})}, b.out(1));
    ex.share("ids of mask_index " + b.out(1), b.in(0));
  } else {
    onnx::AttributeProto zero;
    zero.set_name("value");
    zero.set_type(onnx::AttributeProto::TENSOR);
    zero.mutable_t()->set_data_type(onnx::TensorProto::INT32);
    zero.mutable_t()->add_dims(1);
    zero.mutable_t()->add_int32_data(0);
    b.add("ConstantOfShape", {b.dim(b.in(0), 0)}, {zero}, b.out(1));
  }
  ex.set_rank(b.out(1), 1);
}

// [B,S,H*D] -> [B,H,S,D] (perm {0,2,1,3}) or K^T [B,H,D,S] (perm {0,2,3,1}).
std::string split_heads(NodeBuilder& b, const std::string& x, int64_t heads, int64_t head_size, const Ints& perm) {
  auto r = b.add("Reshape", {x, b.ints({0, 0, heads, head_size})});
  return b.add("Transpose", {r}, {NodeBuilder::attr("perm", perm)});
}

// The additive bias [B,1,1,Sk] or [B,1,Sq,Sk] of mask_index in its 1-D (valid lengths), 2-D
// ([B,Sk], 0 = masked) or 3-D ([B,Sq,Sk]) form: 0 where a key is seen, mask_filter_value elsewhere.
// Shared by every Attention that reads the same mask, where the key count is the mask's own or
// that of the ids whose EmbedLayerNormalization made the mask.
std::string mask_bias(ContribExpander& ex, NodeBuilder& b, const std::string& mask, const std::string& x,
                      float fill) {
  auto shape = ex.shape_of(mask);
  if (!shape) b.unsupported("the rank of mask_index is not known at import");
  auto ids = ex.shared("ids of mask_index " + mask);
  const bool shareable = shape->size() != 1 || ids;
  const std::string key = "bias of mask " + mask + " filled with " + std::to_string(fill);
  if (auto bias = ex.shared(key); bias && shareable) return *bias;
  std::string valid;
  Ints axes;
  if (shape->size() == 1) {
    // Only the [B] form (end positions); [2B] (ends and starts) is not supported.
    auto keys = b.unsqueeze(arange(b, dim_scalar(b, ids ? *ids : x, 1)), {0});
    valid = b.add("Less", {keys, b.unsqueeze(cast(b, mask, onnx::TensorProto::INT64), {1})});
    axes = {1, 2};
  } else if (shape->size() == 2 || shape->size() == 3) {
    valid = b.add("Greater", {cast(b, mask, onnx::TensorProto::FLOAT), b.scalar(0.0f)});
    axes = shape->size() == 2 ? Ints{1, 2} : Ints{1};
  } else {
    b.unsupported("mask_index of rank " + std::to_string(shape->size()) + " is not supported (1, 2 or 3)");
  }
  auto bias = b.unsqueeze(b.add("Where", {valid, b.scalar(0.0f), b.scalar(fill)}), axes);
  if (shareable) ex.share(key, bias);
  return bias;
}

void attention(ContribExpander& ex, NodeBuilder& b) {
  require_inputs(b, {0, 1});
  forbid_inputs(b, 4, 4, "past");
  forbid_inputs(b, 6, 6, "past_sequence_length");
  forbid_outputs(b, 1, "present");
  if (b.attr_int("do_rotary", 0)) b.unsupported("do_rotary is not supported");
  const int64_t heads = b.attr_int("num_heads", 0);
  if (heads <= 0) b.invalid("num_heads must be positive");
  Ints sizes = b.attr_ints("qkv_hidden_sizes");
  if (sizes.empty()) {
    auto w = ex.shape_of(b.in(1));
    if (!w || w->size() != 2 || (*w)[1] <= 0)
      b.unsupported("the packed weights' width is not known at import (give qkv_hidden_sizes)");
    if ((*w)[1] % 3) b.invalid("the packed weights' width " + std::to_string((*w)[1]) + " is not divisible by 3");
    sizes = {(*w)[1] / 3, (*w)[1] / 3, (*w)[1] / 3};
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1]) b.invalid("qkv_hidden_sizes must be 3 sizes with Q and K equal");
  for (int64_t s : sizes)
    if (s <= 0 || s % heads) b.invalid("hidden size " + std::to_string(s) + " is not a positive multiple of num_heads");
  const int64_t dq = sizes[0] / heads, dv = sizes[2] / heads;

  const std::string& x = b.in(0);
  auto projection = [&](int64_t begin, int64_t size) {
    auto y = b.add("MatMul", {x, b.slice(b.in(1), 1, begin, begin + size)});
    return b.has_in(2) ? b.add("Add", {b.slice(b.in(2), 0, begin, begin + size), y}) : y;
  };
  auto q = split_heads(b, projection(0, sizes[0]), heads, dq, {0, 2, 1, 3});
  auto kt = split_heads(b, projection(sizes[0], sizes[1]), heads, dq, {0, 2, 3, 1});
  auto v = split_heads(b, projection(sizes[0] + sizes[1], sizes[2]), heads, dv, {0, 2, 1, 3});

  auto scores = b.add("MatMul", {q, kt});
  const float scale = b.attr_float("scale", 0.0f);
  scores = scale != 0.0f ? b.add("Mul", {scores, b.scalar(scale)})
                         : b.add("Div", {scores, b.scalar(std::sqrt(static_cast<float>(dq)))});
  const float fill = b.attr_float("mask_filter_value", -10000.0f);
  if (b.attr_int("unidirectional", 0)) {
    // Key j is seen from query i when j <= i (no past).
    auto positions = arange(b, dim_scalar(b, x, 1));
    auto later = b.add("Greater", {b.unsqueeze(positions, {0}), b.unsqueeze(positions, {1})});
    scores = b.add("Where", {b.add("Not", {later}), scores, b.scalar(fill)});
  }
  std::string bias = b.has_in(3) ? mask_bias(ex, b, b.in(3), x, fill) : "";
  if (b.has_in(5)) bias = bias.empty() ? b.in(5) : b.add("Add", {bias, b.in(5)});
  if (!bias.empty()) scores = b.add("Add", {scores, bias});
  auto probs = b.add("Softmax", {scores}, {NodeBuilder::attr("axis", int64_t{-1})});
  auto heads_out = b.add("Transpose", {b.add("MatMul", {probs, v})}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})});
  b.add("Reshape", {heads_out, b.ints({0, 0, sizes[2]})}, {}, b.out(0));
  ex.set_rank(b.out(0), 3);
}

// Rotates the first `rd` features of the head axis (last) of the 4-D `x` by the angles whose
// cos and sin broadcast against x's [..., rd/2] (RotaryEmbedding, GroupQueryAttention).
std::string rotate(NodeBuilder& b, const std::string& x, const std::string& cos, const std::string& sin, int64_t rd,
                   bool interleaved, bool keep_rest, const std::string& out) {
  const int64_t half = rd / 2;
  auto turn = [&](const std::string& u, const std::string& v) {  // (u cos - v sin, v cos + u sin)
    return std::pair{b.add("Sub", {b.add("Mul", {u, cos}), b.add("Mul", {v, sin})}),
                     b.add("Add", {b.add("Mul", {v, cos}), b.add("Mul", {u, sin})})};
  };
  std::string rotated;
  if (interleaved) {  // pairs (x[2i], x[2i+1])
    auto even = b.add("Slice", {x, b.ints({0}), b.ints({rd}), b.ints({3}), b.ints({2})});
    auto odd = b.add("Slice", {x, b.ints({1}), b.ints({rd}), b.ints({3}), b.ints({2})});
    auto [e, o] = turn(even, odd);
    auto pairs = b.add("Concat", {b.unsqueeze(e, {4}), b.unsqueeze(o, {4})}, {NodeBuilder::attr("axis", int64_t{4})});
    rotated = b.add("Reshape", {pairs, b.ints({0, 0, 0, rd})}, {}, keep_rest ? "" : out);
  } else {  // halves (x[i], x[i + rd/2])
    auto [lo, hi] = turn(b.slice(x, 3, 0, half), b.slice(x, 3, half, rd));
    rotated = b.add("Concat", {lo, hi}, {NodeBuilder::attr("axis", int64_t{3})}, keep_rest ? "" : out);
  }
  if (!keep_rest) return rotated;
  auto rest = b.slice(x, 3, rd, std::numeric_limits<int64_t>::max());
  return b.add("Concat", {rotated, rest}, {NodeBuilder::attr("axis", int64_t{3})}, out);
}

// cos or sin rows at the positions, shaped to broadcast against x in layout [B,S,N,D]
// (`heads_first` false) or [B,N,S,D]: position_ids [B,S], or [1] as the offset of 0..S-1.
std::string angles(NodeBuilder& b, const std::string& cache, const std::string& positions, size_t positions_rank,
                   const std::string& seq_len, bool heads_first) {
  if (positions_rank == 2) return b.unsqueeze(b.add("Gather", {cache, positions}), {heads_first ? 1 : 2});
  auto rows = b.add("Gather", {cache, b.add("Add", {arange(b, seq_len), positions})});  // [S, D/2]
  return heads_first ? rows : b.unsqueeze(rows, {1});
}

void rotary_embedding(ContribExpander& ex, NodeBuilder& b) {
  require_inputs(b, {0, 1, 2, 3});
  if (b.attr_int("is_packed_batching", 0)) b.unsupported("is_packed_batching is not supported");
  auto xs = ex.shape_of(b.in(0));
  auto ps = ex.shape_of(b.in(1));
  auto cs = ex.shape_of(b.in(2));
  if (!xs || (xs->size() != 3 && xs->size() != 4)) b.unsupported("the input's rank (3 or 4) is not known at import");
  if (!ps || (ps->size() != 1 && ps->size() != 2)) b.unsupported("the position_ids' rank (1 or 2) is not known at import");
  const bool heads_first = xs->size() == 4;
  const int64_t heads = b.attr_int("num_heads", 0);
  int64_t rd = b.attr_int("rotary_embedding_dim", 0);
  int64_t head_size = heads_first ? xs->back() : (heads > 0 && xs->back() > 0 ? xs->back() / heads : -1);
  if (rd == 0) {
    if (head_size < 0 && cs && cs->size() == 2 && (*cs)[1] > 0) head_size = 2 * (*cs)[1];
    if (head_size < 0) b.unsupported("the head size is not known at import");
    rd = head_size;
  }
  if (rd <= 0 || rd % 2) b.invalid("rotary_embedding_dim must be positive and even");
  std::string x = b.in(0);
  if (!heads_first) {
    if (heads <= 0 && head_size < 0) b.unsupported("a 3-D input needs num_heads");
    x = b.add("Reshape", {x, b.ints(heads > 0 ? Ints{0, 0, heads, -1} : Ints{0, 0, -1, head_size})});
  }
  auto seq_len = dim_scalar(b, x, heads_first ? 2 : 1);
  auto cos = angles(b, b.in(2), b.in(1), ps->size(), seq_len, heads_first);
  auto sin = angles(b, b.in(3), b.in(1), ps->size(), seq_len, heads_first);
  const bool keep_rest = head_size < 0 || rd < head_size;
  auto y = rotate(b, x, cos, sin, rd, b.attr_int("interleaved", 0) != 0, keep_rest, heads_first ? b.out(0) : "");
  if (!heads_first) b.add("Reshape", {y, b.ints({0, 0, -1})}, {}, b.out(0));
  ex.set_rank(b.out(0), xs->size());
}

// Decoder self-attention whose K and V have fewer heads than Q, here without a KV cache (the
// prompt pass): present_key/value are this pass's K and V, keys are masked causally and beyond
// each row's seqlens_k + 1 (right padding), and each KV head serves num_heads / kv_num_heads.
void group_query_attention(ContribExpander& ex, NodeBuilder& b) {
  require_inputs(b, {0, 5, 6});
  forbid_inputs(b, 3, 4, "past_key/past_value: a KV cache");
  forbid_inputs(b, 11, 11, "head_sink");
  forbid_outputs(b, 3, "output_qk");
  if (b.attr_int("smooth_softmax", 0)) b.unsupported("smooth_softmax is not supported");
  if (b.attr_int("local_window_size", -1) != -1) b.unsupported("local_window_size is not supported");
  const int64_t heads = b.attr_int("num_heads", 0), kv_heads = b.attr_int("kv_num_heads", 0);
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads) b.invalid("num_heads must be a positive multiple of kv_num_heads");
  auto qs = ex.shape_of(b.in(0));
  if (!qs || qs->size() != 3 || qs->back() <= 0) b.unsupported("the query's hidden size is not known at import");
  const bool packed = !b.has_in(1);
  if (packed == b.has_in(2)) b.invalid("key and value come together (or neither, for packed QKV)");
  const int64_t width = qs->back(), parts = packed ? heads + 2 * kv_heads : heads;
  if (width % parts) b.invalid("the query's hidden size " + std::to_string(width) + " does not split into the heads");
  const int64_t d = width / parts;
  std::string q = b.in(0), k = b.in(1), v = b.in(2);
  if (packed) {
    q = b.slice(b.in(0), 2, 0, heads * d);
    k = b.slice(b.in(0), 2, heads * d, (heads + kv_heads) * d);
    v = b.slice(b.in(0), 2, (heads + kv_heads) * d, width);
  }
  auto seq_len = dim_scalar(b, b.in(0), 1);
  auto to_heads = [&](const std::string& x, int64_t n, bool rotary, const std::string& out) {
    auto y = b.add("Reshape", {x, b.ints({0, 0, n, d})});  // [B,S,n,D]
    if (rotary) {
      auto ps = b.has_in(9) ? ex.shape_of(b.in(9)) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{1});
      if (!ps || ps->size() != 2 && ps->size() != 1) b.unsupported("the position_ids' rank is not known at import");
      auto positions = b.has_in(9) ? b.in(9) : b.ints({0});
      auto cos = angles(b, b.in(7), positions, ps->size(), seq_len, false);
      auto sin = angles(b, b.in(8), positions, ps->size(), seq_len, false);
      auto cs = ex.shape_of(b.in(7));
      const int64_t rd = cs && cs->size() == 2 && (*cs)[1] > 0 ? 2 * (*cs)[1] : d;
      y = rotate(b, y, cos, sin, rd, b.attr_int("rotary_interleaved", 0) != 0, rd < d, "");
    }
    return b.add("Transpose", {y}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})}, out);  // [B,n,S,D]
  };
  const bool rotary = b.attr_int("do_rotary", 0) != 0;
  if (rotary && (!b.has_in(7) || !b.has_in(8))) b.invalid("do_rotary needs cos_cache and sin_cache");
  auto qh = to_heads(q, heads, rotary, "");
  auto kh = to_heads(k, kv_heads, rotary, b.out(1));
  auto vh = to_heads(v, kv_heads, false, b.out(2));
  auto repeat = [&](const std::string& x) {  // [B,kv,S,D] -> [B,kv*g,S,D], each head g times
    if (heads == kv_heads) return x;
    auto e = b.add("Expand", {b.unsqueeze(x, {2}), b.ints({1, 1, heads / kv_heads, 1, 1})});
    return b.add("Reshape", {e, b.ints({0, heads, -1, d})});
  };
  auto kt = b.add("Transpose", {repeat(kh)}, {NodeBuilder::attr("perm", Ints{0, 1, 3, 2})});
  const float scale = b.attr_float("scale", 0.0f);
  auto scores = b.add("Mul", {b.add("MatMul", {qh, kt}), b.scalar(scale != 0.0f ? scale : 1.0f / std::sqrt(float(d)))});
  if (const float cap = b.attr_float("softcap", 0.0f); cap > 0.0f)
    scores = b.add("Mul", {b.add("Tanh", {b.add("Div", {scores, b.scalar(cap)})}), b.scalar(cap)});
  // Key j is seen from query i when j <= i and j <= seqlens_k[b]: Where(a, b, a) is a && b.
  auto positions = arange(b, seq_len);
  auto keys = b.unsqueeze(positions, {0, 1, 2});
  auto causal = b.add("Not", {b.add("Greater", {keys, b.unsqueeze(positions, {0, 1, 3})})});
  auto lengths = b.unsqueeze(cast(b, b.in(5), onnx::TensorProto::INT64), {1, 2, 3});
  auto in_row = b.add("Not", {b.add("Greater", {keys, lengths})});
  auto seen = b.add("Where", {in_row, causal, in_row});
  scores = b.add("Where", {seen, scores, b.scalar(std::numeric_limits<float>::lowest())});
  if (b.has_in(10)) scores = b.add("Add", {scores, b.in(10)});
  auto probs = b.add("Softmax", {scores}, {NodeBuilder::attr("axis", int64_t{-1})});
  auto heads_out = b.add("Transpose", {b.add("MatMul", {probs, repeat(vh)})}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})});
  b.add("Reshape", {heads_out, b.ints({0, 0, heads * d})}, {}, b.out(0));
  ex.set_rank(b.out(0), 3);
}

void bias_add(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0, 1, 2});
  b.add("Add", {b.add("Add", {b.in(0), b.in(1)}), b.in(2)}, {}, b.out(0));
}

void bias_gelu(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0, 1});
  erf_gelu(b, b.add("Add", {b.in(0), b.in(1)}), b.out(0));
}

void gelu(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0});
  erf_gelu(b, b.in(0), b.out(0));
}

void fast_gelu(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0});
  tanh_gelu(b, b.has_in(1) ? b.add("Add", {b.in(0), b.in(1)}) : b.in(0), b.out(0));
}

void quick_gelu(ContribExpander&, NodeBuilder& b) {
  require_inputs(b, {0});
  auto s = b.add("Sigmoid", {b.add("Mul", {b.in(0), b.scalar(b.attr_float("alpha", 1.702f))})});
  b.add("Mul", {b.in(0), s}, {}, b.out(0));
}

using Expansion = void (*)(ContribExpander&, NodeBuilder&);

struct ContribOp {
  const char* name;
  bool default_domain_too;  // ORT also registers it in ONNX's domain
  Expansion expand;
};

constexpr ContribOp kContribOps[] = {
    {"FusedMatMul", false, fused_matmul},
    {"BiasGelu", false, bias_gelu},
    {"FastGelu", false, fast_gelu},
    {"Gelu", false, gelu},
    {"QuickGelu", false, quick_gelu},
    {"BiasAdd", false, bias_add},
    {"SkipLayerNormalization", false, skip_layer_norm},
    {"SimplifiedLayerNormalization", true, simplified_layer_norm},
    {"SkipSimplifiedLayerNormalization", false, skip_simplified_layer_norm},
    {"EmbedLayerNormalization", false, embed_layer_norm},
    {"Attention", false, attention},
    {"RotaryEmbedding", false, rotary_embedding},
    {"GroupQueryAttention", false, group_query_attention},
};

const ContribOp* find_op(const std::string& domain, const std::string& op_type) {
  const bool contrib = domain == kOrtContribDomain;
  if (!contrib && !domain.empty()) return nullptr;
  for (const auto& op : kContribOps)
    if (op_type == op.name && (contrib || op.default_domain_too)) return &op;
  return nullptr;
}

}  // namespace

bool is_expanded_contrib_op(const std::string& domain, const std::string& op_type) {
  return find_op(domain, op_type) != nullptr;
}

std::optional<std::vector<int64_t>> ContribExpander::shape_of(const std::string& name) const {
  if (shapes_)
    if (auto s = (*shapes_)(name)) return s;
  if (auto it = ranks_.find(name); it != ranks_.end()) return std::vector<int64_t>(it->second, -1);
  return std::nullopt;
}

void ContribExpander::set_rank(const std::string& name, size_t rank) {
  if (!name.empty()) ranks_[name] = rank;
}

std::optional<std::string> ContribExpander::shared(const std::string& key) const {
  auto it = shared_.find(key);
  return it == shared_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void ContribExpander::share(const std::string& key, const std::string& value) { shared_[key] = value; }

std::vector<onnx::NodeProto> ContribExpander::expand(const onnx::NodeProto& node, int64_t opset,
                                                     const ShapeLookup& shapes) {
  const ContribOp* op = find_op(node.domain() == "ai.onnx" ? "" : node.domain(), node.op_type());
  NodeBuilder b(node, opset);
  if (!op) b.unsupported("unsupported operator");
  if (node.output_size() == 0 || node.output(0).empty()) b.invalid("output 0 is required");
  shapes_ = &shapes;
  try {
    op->expand(*this, b);
  } catch (...) {
    shapes_ = nullptr;
    throw;
  }
  shapes_ = nullptr;
  return b.take();
}

}  // namespace fusor
