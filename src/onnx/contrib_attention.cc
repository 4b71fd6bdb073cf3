// Attention-family expansions of ONNX Runtime contrib ops (see contrib_ops.h): Attention in the
// Reshape/Transpose/MatMul/Softmax form of a BERT export (passes/fuse_attention.cc matches it),
// RotaryEmbedding, and GroupQueryAttention for a decoder's prompt pass (no KV cache).
#include "onnx/contrib_attention.h"

#include <cmath>
#include <limits>

namespace fusor::contrib {
namespace {

using Ints = std::vector<int64_t>;

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
    // Only the [B] form (end positions): the Reshape to [B] refuses [2B] (ends and starts).
    const std::string& rows = ids ? *ids : x;
    auto keys = b.unsqueeze(b.arange(b.dim_scalar(rows, 1)), {0});
    auto ends = b.add("Reshape", {b.cast(mask, onnx::TensorProto::INT64), b.dim(rows, 0)});
    valid = b.add("Less", {keys, b.unsqueeze(ends, {1})});
    axes = {1, 2};
  } else if (shape->size() == 2 || shape->size() == 3) {
    valid = b.add("Greater", {b.cast(mask, onnx::TensorProto::FLOAT), b.scalar(0.0f)});
    axes = shape->size() == 2 ? Ints{1, 2} : Ints{1};
  } else {
    b.unsupported("mask_index of rank " + std::to_string(shape->size()) + " is not supported (1, 2 or 3)");
  }
  auto bias = b.unsqueeze(b.add("Where", {valid, b.scalar(0.0f), b.scalar(fill)}), axes);
  if (shareable) ex.share(key, bias);
  return bias;
}

}  // namespace

void attention(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1});
  b.forbid_inputs(4, 4, "past");
  b.forbid_inputs(6, 6, "past_sequence_length");
  b.forbid_outputs(1, "present");
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
    auto positions = b.arange(b.dim_scalar(x, 1));
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

namespace {

// cos or sin rows at the positions, shaped to broadcast against x in layout [B,S,N,D]
// (`heads_first` false) or [B,N,S,D]: position_ids [B,S], or [1] as the offset of 0..S-1.
std::string angles(NodeBuilder& b, const std::string& cache, const std::string& positions, size_t positions_rank,
                   const std::string& seq_len, bool heads_first) {
  if (positions_rank == 2) return b.unsqueeze(b.add("Gather", {cache, positions}), {heads_first ? 1 : 2});
  auto rows = b.add("Gather", {cache, b.add("Add", {b.arange(seq_len), positions})});  // [S, D/2]
  return heads_first ? rows : b.unsqueeze(rows, {1});
}

}  // namespace

void rotary_embedding(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1, 2, 3});
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
  auto seq_len = b.dim_scalar(x, heads_first ? 2 : 1);
  auto cos = angles(b, b.in(2), b.in(1), ps->size(), seq_len, heads_first);
  auto sin = angles(b, b.in(3), b.in(1), ps->size(), seq_len, heads_first);
  const bool keep_rest = head_size < 0 || rd < head_size;
  auto y = rotate(b, x, cos, sin, rd, b.attr_int("interleaved", 0) != 0, keep_rest, heads_first ? b.out(0) : "");
  if (!heads_first) b.add("Reshape", {y, b.ints({0, 0, -1})}, {}, b.out(0));
  ex.set_rank(b.out(0), xs->size());
}

// Decoder self-attention whose K and V have fewer heads than Q, each KV head serving
// num_heads / kv_num_heads. With past_key/past_value, this step's keys and values are written into
// the past at each row's past length, seqlens_k[b] + 1 - S (ORT's buffer, max(past length,
// total_sequence_length) long: the past as it is when it holds the valid keys only, ONNX Runtime
// GenAI's shared max-length buffer otherwise). Key j is seen from query i when j <= i + that past
// length and j <= seqlens_k[b] (right padding and a buffer's unwritten tail stay hidden); rotary
// positions count from the past length too, unless position_ids give them.
void group_query_attention(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 5, 6});
  const bool past = b.has_in(3) || b.has_in(4);
  if (past && !(b.has_in(3) && b.has_in(4))) b.invalid("past_key and past_value come together");
  b.forbid_inputs(11, 11, "head_sink");
  b.forbid_outputs(3, "output_qk");
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
  auto seq_len = b.dim_scalar(b.in(0), 1);
  // seqlens_k [B]: each row's valid keys - 1 ([B, 1] read as [B], as ONNX Runtime reads it).
  auto lengths = b.add("Reshape", {b.cast(b.in(5), onnx::TensorProto::INT64), b.ints({-1})});
  // Each row's past length [B] (0 for a first, right-padded prompt).
  std::string past_len;
  if (past) past_len = b.add("Max", {b.add("Sub", {b.add("Add", {lengths, b.scalar_i64(1)}), seq_len}), b.scalar_i64(0)});
  // Rotary positions: position_ids [B,S] or [1] (an offset), else 0.. (after the past length).
  std::optional<std::vector<int64_t>> position_shape{std::vector<int64_t>{1}};
  std::string positions = b.ints({0});
  if (b.has_in(9)) {
    position_shape = ex.shape_of(b.in(9));
    positions = b.in(9);
  } else if (past) {
    position_shape = std::vector<int64_t>{-1, -1};
    positions = b.add("Add", {b.unsqueeze(past_len, {1}), b.unsqueeze(b.arange(seq_len), {0})});
  }
  auto to_heads = [&](const std::string& x, int64_t n, bool rotary, const std::string& out) {
    auto y = b.add("Reshape", {x, b.ints({0, 0, n, d})});  // [B,S,n,D]
    if (rotary) {
      const auto& ps = position_shape;
      if (!ps || (ps->size() != 2 && ps->size() != 1)) b.unsupported("the position_ids' rank is not known at import");
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
  auto kh = to_heads(k, kv_heads, rotary, past ? "" : b.out(1));
  auto vh = to_heads(v, kv_heads, false, past ? "" : b.out(2));
  std::string keys_len = seq_len;
  if (past) {
    // The buffer: each row's valid past (the rest zeros, as ONNX Runtime writes a present of its
    // own), padded at its end up to total_sequence_length, with this step written after it.
    auto total = b.cast(b.add("Reshape", {b.in(6), b.ints({-1})}), onnx::TensorProto::INT64);  // [1]
    auto short_by = b.add("Max", {b.add("Sub", {total, b.dim(b.in(3), 2)}), b.ints({0})});
    auto pads = b.add("Concat", {b.ints({0, 0, 0, 0, 0, 0}), short_by, b.ints({0})}, {NodeBuilder::attr("axis", int64_t{0})});
    auto row_past = b.unsqueeze(past_len, {1, 2, 3});
    auto at = b.add("Add", {row_past, b.unsqueeze(b.arange(seq_len), {0, 1, 3})});
    auto write = [&](size_t past_input, const std::string& fresh, const std::string& out) {
      auto padded = b.add("Pad", {b.in(past_input), pads});
      auto slots = b.unsqueeze(b.arange(b.dim_scalar(padded, 2)), {0, 1, 3});
      auto buffer = b.add("Where", {b.add("Less", {slots, row_past}), padded, b.scalar(0.0f)});
      auto index = b.add("Expand", {at, b.add("Shape", {fresh})});
      return b.add("ScatterElements", {buffer, index, fresh}, {NodeBuilder::attr("axis", int64_t{2})}, out);
    };
    kh = write(3, kh, b.out(1));
    vh = write(4, vh, b.out(2));
    keys_len = b.dim_scalar(kh, 2);
  }
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
  // Key j is seen from query i when j <= i + past length and j <= seqlens_k[b]: Where(a, b, a)
  // is a && b.
  auto keys = b.unsqueeze(b.arange(keys_len), {0, 1, 2});
  auto queries = b.unsqueeze(b.arange(seq_len), {0, 1, 3});
  if (past) queries = b.add("Add", {queries, b.unsqueeze(past_len, {1, 2, 3})});
  auto causal = b.add("Not", {b.add("Greater", {keys, queries})});
  auto in_row = b.add("Not", {b.add("Greater", {keys, b.unsqueeze(lengths, {1, 2, 3})})});
  auto seen = b.add("Where", {in_row, causal, in_row});
  scores = b.add("Where", {seen, scores, b.scalar(std::numeric_limits<float>::lowest())});
  if (b.has_in(10)) scores = b.add("Add", {scores, b.in(10)});
  auto probs = b.add("Softmax", {scores}, {NodeBuilder::attr("axis", int64_t{-1})});
  auto heads_out = b.add("Transpose", {b.add("MatMul", {probs, repeat(vh)})}, {NodeBuilder::attr("perm", Ints{0, 2, 1, 3})});
  b.add("Reshape", {heads_out, b.ints({0, 0, heads * d})}, {}, b.out(0));
  ex.set_rank(b.out(0), 3);
}

}  // namespace fusor::contrib
