#include "passes/cache_attention.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "fusor/error.h"
#include "ir/bind.h"
#include "ir/graph_edit.h"
#include "ir/half.h"
#include "passes/storage_types.h"

namespace fusor {
namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw Error("cannot cache attention: " + why, ErrorKind::UnsupportedOp);
}

constexpr float kMasked = -1e4f;  // a score at or below this adds exactly 0 after the softmax
constexpr int kMaxChain = 16;  // a float16 path passes a Cast to float32 and back around each op

// The float types the paged cache takes: the pool holds float32, and the cached attention reads
// a float16 or bfloat16 model's queries, keys and values through Casts (exact).
bool is_float_type(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }

// The relative error one rounding to `t` may add to a checked value.
double rounding_of(DType t) { return t == DType::Float16 ? 1e-3 : t == DType::BFloat16 ? 8e-3 : 1e-6; }

// A tensor of float type `dtype` holding value(i) at index i, rounded to the type.
template <class F>
Tensor float_tensor(DType dtype, const Dims& dims, F value) {
  Tensor t(dtype, dims);
  auto* bits = static_cast<uint16_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = value(i);
    if (dtype == DType::Float32) t.data<float>()[i] = v;
    else bits[i] = dtype == DType::Float16 ? float_to_half(v) : float_to_bfloat16(v);
  }
  return t;
}

// A float tensor's values as float32 (a copy).
Tensor as_float32(const Tensor& t) {
  return float_tensor(DType::Float32, t.dims(), [&](int64_t i) { return static_cast<float>(t.scalar_as_double(i)); });
}

// Distinct values as far as the type holds integers exactly (float16 to 2048, bfloat16 to 256),
// then repeating with a prime period: a wrong head or position still shows.
int64_t distinct_period(DType t) { return t == DType::Float16 ? 2039 : t == DType::BFloat16 ? 251 : int64_t{1} << 24; }

// One layer's attention as the export computes it.
struct LayerMatch {
  int present_k = -1, present_v = -1;   // Concat outputs: the keys and values attended over
  int crop_k = -1, crop_v = -1;         // the Slices that crop them into the present outputs, if any
  int64_t past_kept = 0;                // the past's last positions the Concat reads; 0: all
  int new_k = -1, new_v = -1;           // this step's keys and values, [1, KVH, T, D]
  int query = -1;                       // [1, H, T, D]
  int scores = -1;                      // Q K^T, [1, H, T, past + T]
  int product = -1;                     // node index of P V
  int probs = -1;                       // the Softmax's output
  // Node indices, in graph order. The probability nodes (Casts, and a guard that zeroes rows
  // seeing no key) must leave the probabilities as they are.
  std::vector<int> key_path, value_path, score_path;
  std::set<int> prob_nodes;
  float key_scale = 1;  // a constant the key path multiplies by (torch's SDPA export scales K by sqrt(scale))
};

// One graph bound at a probe (tokens, past), with the attention mask all ones.
struct Probe {
  int64_t tokens, past;
  Binding bound;
};

int value_id(const Graph& g, const std::string& name, const char* what) {
  int id = g.find_value(name);
  if (id < 0) refuse(std::string("the model has no ") + what + " '" + name + "'");
  return id;
}

// The one consumer of `value` that is not folded at plan time (Shape readers are), or -1; node
// `skip` does not count.
int only_live_consumer(const Graph& g, const std::vector<std::vector<int>>& consumers, const Binding& b, int value,
                       int skip = -1) {
  int found = -1;
  for (int c : consumers[static_cast<size_t>(value)]) {
    if (c == skip || b.folded(g.nodes[static_cast<size_t>(c)])) continue;
    if (found >= 0 && found != c) return -2;
    found = c;
  }
  return found;
}

// Follows `value` forward through single live consumers of the `through` ops to a node of op
// `until`; returns the nodes passed and the one reached (last), or refuses naming `what`. Node
// `skip` does not count as a reader of `value`.
std::vector<int> forward_path(const Graph& g, const std::vector<std::vector<int>>& consumers, const Binding& b,
                              int value, const std::set<Op>& through, Op until, const std::string& what, int skip = -1) {
  std::vector<int> path;
  for (int step = 0; step <= kMaxChain; ++step) {
    const int c = only_live_consumer(g, consumers, b, value, path.empty() ? skip : -1);
    if (c == -2) refuse(what + " ('" + g.values[static_cast<size_t>(value)].name + "') is read by more than one op");
    if (c < 0) refuse(what + " ('" + g.values[static_cast<size_t>(value)].name + "') is not read by an attention");
    const Node& n = g.nodes[static_cast<size_t>(c)];
    path.push_back(c);
    if (n.op == until) return path;
    if (!through.count(n.op)) refuse(what + " reaches " + n.op_type + " '" + n.name + "', not " + op_info(until).name);
    value = n.outputs[0];
  }
  refuse(what + " does not reach a " + std::string(op_info(until).name) + " within " + std::to_string(kMaxChain) + " ops");
}

// Evaluates `path` (each node reading the running value and otherwise plan-time constants) on
// `x`, which stands for value `start`.
Tensor run_path(const Graph& g, const Binding& b, const std::vector<int>& path, int start, Tensor x,
                EvaluateFn evaluate, const std::string& what) {
  int current = start;
  for (int idx : path) {
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    std::vector<Tensor> ins;
    for (int v : n.inputs) {
      if (v == current) ins.push_back(x);
      else if (v < 0) ins.emplace_back();
      else if (b.is_constant(v)) ins.push_back(b.constants[static_cast<size_t>(v)]);
      else refuse(what + ": " + n.op_type + " '" + n.name + "' reads '" + g.values[static_cast<size_t>(v)].name +
                  "', which is not known at plan time");
    }
    std::vector<Tensor> outs;
    for (int v : n.outputs) {
      const TensorType& t = b.types[static_cast<size_t>(v)];
      outs.emplace_back(t.dtype, t.dims);
    }
    evaluate(n, ins, outs);
    x = outs[0];
    current = n.outputs[0];
  }
  return x;
}

// Evaluates `nodes` (indices, in graph order) at a probe, each reading `values` (which it extends
// with its outputs) or plan-time constants; false when one reads anything else.
bool run_nodes(const Graph& g, const Binding& b, const std::set<int>& nodes, std::map<int, Tensor>& values,
               EvaluateFn evaluate) {
  for (int idx : nodes) {  // graph order is topological
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    std::vector<Tensor> ins;
    for (int v : n.inputs) {
      if (v < 0) ins.emplace_back();
      else if (auto it = values.find(v); it != values.end()) ins.push_back(it->second);
      else if (b.is_constant(v)) ins.push_back(b.constants[static_cast<size_t>(v)]);
      else return false;
    }
    std::vector<Tensor> outs;
    for (int v : n.outputs) outs.emplace_back(b.types[static_cast<size_t>(v)].dtype, b.types[static_cast<size_t>(v)].dims);
    evaluate(n, ins, outs);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] >= 0) values[n.outputs[i]] = outs[i];
  }
  return true;
}

// The key (transposed) or value path must read KV head h / (H / KVH) for query head h.
// With `factor` != 1 (the key path's constant), the path must give factor times the keys.
void check_head_repeat(const Graph& g, const Probe& p, const std::vector<int>& path, int present, int64_t heads,
                       bool transposed, float factor, EvaluateFn evaluate, const std::string& what) {
  const TensorType& type = p.bound.types[static_cast<size_t>(present)];
  const Dims d = type.dims;  // [1, KVH, S, D]
  const int64_t period = distinct_period(type.dtype);
  const Tensor x = float_tensor(type.dtype, d, [&](int64_t i) { return static_cast<float>(i % period); });
  const Tensor y = run_path(g, p.bound, path, present, x, evaluate, what);
  const int64_t kvh = d[1], s = d[2], hd = d[3];
  const Dims want = transposed ? Dims{1, heads, hd, s} : Dims{1, heads, s, hd};
  // One KV head the product broadcasts over every query head (Falcon's multi-query attention).
  const bool broadcast = kvh == 1 && y.dims() == (transposed ? Dims{1, 1, hd, s} : Dims{1, 1, s, hd});
  if (!is_float_type(y.dtype()) || (y.dims() != want && !broadcast))
    refuse(what + " is " + dims_to_string(y.dims()) + " where " + dims_to_string(want) + " was expected");
  const int64_t rep = heads / kvh;
  for (int64_t h = 0; h < (broadcast ? 1 : heads); ++h)
    for (int64_t j = 0; j < s; ++j)
      for (int64_t c = 0; c < hd; ++c) {
        const double got = y.scalar_as_double(transposed ? (h * hd + c) * s + j : (h * s + j) * hd + c);
        const double want = x.scalar_as_double(((h / rep) * s + j) * hd + c) * factor;
        if (factor == 1 ? got != want : std::fabs(got - want) > rounding_of(type.dtype) * std::fabs(want))
          refuse(what + " does not give query head " + std::to_string(h) + " the keys and values of KV head " +
                 std::to_string(h / rep));
      }
}

// The score path evaluated on known scores, giving `y`. With a softcap (Gemma 2's
// cap * tanh(scale * score / cap), before the mask) the path splits at its Tanh: the part before
// must be linear, pre_scale * score, and `x` is then tanh of that, so that the rest, like a path
// without a softcap, must give y = cap * x where a key is seen.
struct ScoreRun {
  Dims dims;  // [1, H, T, past + T], or [1, H, T, kept + T] where the past is cut to its last `kept`
  Tensor x, y;
  double pre_scale = 0;   // with a softcap: the scale before the Tanh; 0 without one
  int64_t first_key = 0;  // the position of key 0: past - kept where the cut acts
  double tolerance = 0;   // relative, for the scores' type
};

ScoreRun run_scores(const Graph& g, const Probe& p, const LayerMatch& m, EvaluateFn evaluate, const std::string& what) {
  const std::vector<int>& path = m.score_path;
  const int scores = m.scores;
  const Dims d = p.bound.types[static_cast<size_t>(scores)].dims;
  const int64_t seen_past = m.past_kept ? std::min(p.past, m.past_kept) : p.past;
  if (d.size() != 4 || d[2] != p.tokens || d[3] != p.tokens + seen_past)
    refuse(what + ": the scores are " + dims_to_string(d) + ", not [1, heads, tokens, past + tokens]");
  const DType dtype = p.bound.types[static_cast<size_t>(scores)].dtype;
  double tolerance = rounding_of(dtype);  // and the roundings of the types the path passes
  for (int n : path)
    for (int o : g.nodes[static_cast<size_t>(n)].outputs)
      if (o >= 0) tolerance = std::max(tolerance, rounding_of(p.bound.types[static_cast<size_t>(o)].dtype));
  Tensor x = float_tensor(dtype, d, [](int64_t i) { return 0.25f + static_cast<float>(i % 13) * 0.5f; });
  const auto tanh_at = std::find_if(path.begin(), path.end(), [&](int n) { return g.nodes[static_cast<size_t>(n)].op == Op::Tanh; });
  double pre_scale = 0;
  int start = scores;
  std::vector<int> rest = path;
  if (tanh_at != path.end()) {
    if (std::count_if(tanh_at + 1, path.end(), [&](int n) { return g.nodes[static_cast<size_t>(n)].op == Op::Tanh; }))
      refuse(what + ": the scores pass more than one Tanh");
    const std::vector<int> before(path.begin(), tanh_at);
    const Tensor u = run_path(g, p.bound, before, scores, x, evaluate, what);
    if (!is_float_type(u.dtype()) || u.dims() != d) refuse(what + ": the scores before the softcap change shape");
    pre_scale = u.scalar_as_double(0) / x.scalar_as_double(0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double want = pre_scale * x.scalar_as_double(i), got = u.scalar_as_double(i);
      if (std::fabs(got - want) > tolerance * std::fabs(want)) refuse(what + ": the scores before the softcap are not only scaled");
    }
    x = float_tensor(u.dtype(), d, [&](int64_t i) { return std::tanh(static_cast<float>(u.scalar_as_double(i))); });
    start = g.nodes[static_cast<size_t>(*tanh_at)].outputs[0];
    rest.assign(tanh_at + 1, path.end());
  }
  Tensor y = run_path(g, p.bound, rest, start, x, evaluate, what);
  if (!is_float_type(y.dtype()) || y.dims() != d)
    refuse(what + ": the masked scores are " + dims_to_string(y.dims()) + ", not " + dims_to_string(d));
  return {d, as_float32(x), as_float32(y), pre_scale, p.past - seen_past, tolerance};
}

// The nodes from the Softmax to P V: Casts, and a guard that zeroes rows seeing no key (ONNX's
// Attention: Where(seen, p, 0); torch's SDPA export: Where(IsNaN(p), 0, p), which reads the
// probabilities twice). Nothing outside may read a value between. Returns them and P V's node.
std::pair<std::set<int>, int> probability_nodes(const Graph& g, const std::vector<std::vector<int>>& consumers,
                                                const Binding& b, int probs, const std::string& what) {
  const std::set<Op> passing = {Op::Cast, Op::Identity, Op::Where, Op::IsNaN, Op::Not};
  std::set<int> nodes;
  std::set<int> inside = {probs};  // values
  int product = -1;
  std::vector<int> pending = {probs};
  while (!pending.empty()) {
    const int v = pending.back();
    pending.pop_back();
    for (int c : consumers[static_cast<size_t>(v)]) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (b.folded(n) || nodes.count(c) || c == product) continue;
      if (n.op == Op::MatMul) {
        if (product >= 0) refuse(what + " reach more than one MatMul");
        product = c;
        continue;
      }
      if (!passing.count(n.op)) refuse(what + " reach " + n.op_type + " '" + n.name + "', not MatMul");
      if (nodes.size() >= kMaxChain) refuse(what + " pass more than " + std::to_string(kMaxChain) + " ops");
      nodes.insert(c);
      for (int o : n.outputs)
        if (o >= 0 && inside.insert(o).second) pending.push_back(o);
    }
  }
  if (product < 0) refuse(what + " are not read by an attention");
  const Node& pv = g.nodes[static_cast<size_t>(product)];
  if (pv.inputs.size() != 2 || !inside.count(pv.inputs[0]) || inside.count(pv.inputs[1]))
    refuse(what + " are not the left operand of P V");
  for (int v : inside)  // only the product may read what the guard computes
    for (int c : consumers[static_cast<size_t>(v)])
      if (!nodes.count(c) && c != product && !b.folded(g.nodes[static_cast<size_t>(c)]))
        refuse(what + " are read outside the attention");
  return {nodes, product};
}

// The probability nodes must give P V the probabilities unchanged (with every token real, a guard
// that zeroes rows seeing no key passes every row).
void check_probabilities_kept(const Graph& g, const Probe& p, const LayerMatch& m, EvaluateFn evaluate,
                              const std::string& what) {
  const TensorType& type = p.bound.types[static_cast<size_t>(m.probs)];
  const Dims& d = type.dims;
  const Tensor x = float_tensor(type.dtype, d, [](int64_t i) { return 0.125f + static_cast<float>(i % 7) * 0.0625f; });
  std::map<int, Tensor> values = {{m.probs, x}};
  if (!run_nodes(g, p.bound, m.prob_nodes, values, evaluate)) refuse(what + " read values not known at plan time");
  const Tensor& y = values[g.nodes[static_cast<size_t>(m.product)].inputs[0]];
  bool kept = is_float_type(y.dtype()) && y.dims() == d;
  for (int64_t i = 0; kept && i < x.numel(); ++i) kept = y.scalar_as_double(i) == x.scalar_as_double(i);
  if (!kept) refuse(what + " changes the probabilities");
}

// The sliding window the masked scores show: the last query (at position p) sees keys from
// p - window + 1 on; 0 when it sees key 0 (no window shows at this probe).
int64_t window_shown(const ScoreRun& s, const Probe& p) {
  const int64_t last = p.past + p.tokens - 1;  // the last query's position: it sees the most keys
  const float* row = s.y.data<float>() + (p.tokens - 1) * s.dims[3];
  for (int64_t key = s.first_key; key <= last; ++key)
    if (!(row[key - s.first_key] <= kMasked)) return key == 0 ? 0 : last - key + 1;
  return 0;
}

// The masked scores must be scale * score where key j is in query i's view (j <= i + past, and
// within the last `window` positions when there is a window) and masked elsewhere; returns the scale.
double check_scores(const ScoreRun& s, const Probe& p, int64_t window, const std::string& what) {
  const Dims& d = s.dims;
  const float* x = s.x.data<float>();
  const float* y = s.y.data<float>();
  auto seen = [&](int64_t i, int64_t key) { return key <= i + p.past && (window == 0 || key > i + p.past - window); };
  // The scale fitted over every seen score (least squares): exact in float32, and in float16 it
  // averages the roundings out.
  double xy = 0, xx = 0;
  for (int64_t hq = 0; hq < d[1] * d[2]; ++hq)
    for (int64_t j = 0; j < d[3]; ++j)
      if (seen(hq % d[2], s.first_key + j)) {
        const int64_t at = hq * d[3] + j;
        xy += static_cast<double>(x[at]) * y[at];
        xx += static_cast<double>(x[at]) * x[at];
      }
  const double scale = xx > 0 ? xy / xx : 0;
  for (int64_t hq = 0; hq < d[1] * d[2]; ++hq)
    for (int64_t j = 0; j < d[3]; ++j) {
      const int64_t i = hq % d[2], at = hq * d[3] + j, key = s.first_key + j;
      const float got = y[at], want = static_cast<float>(scale * x[at]);
      if (seen(i, key) ? std::fabs(got - want) > s.tolerance * std::fabs(want) : !(got <= kMasked))
        refuse(what + ": at tokens " + std::to_string(p.tokens) + ", past " + std::to_string(p.past) + ", query " +
               std::to_string(i) + " key " + std::to_string(j) + " the scores are not scaled and causally masked" +
               (window ? " within a window of " + std::to_string(window) : std::string()));
    }
  return scale;
}

// The graph's input types at a probe (tokens, past), and the attention mask, all ones.
struct ProbeInputs {
  std::vector<TensorType> types;
  std::vector<Tensor> frozen;
};

ProbeInputs probe_inputs(const Graph& g, const DecoderGraphNames& names, int64_t tokens, int64_t past) {
  std::vector<TensorType> types;
  std::vector<Tensor> frozen(g.inputs.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value& v = g.values[static_cast<size_t>(g.inputs[i])];
    TensorType t{v.dtype, {}};
    const bool is_past = std::count(names.past_keys.begin(), names.past_keys.end(), v.name) ||
                         std::count(names.past_values.begin(), names.past_values.end(), v.name);
    if (v.name == names.input_ids || v.name == names.position_ids) {
      t.dims = {1, tokens};
    } else if (v.name == names.attention_mask) {
      t.dims = {1, past + tokens};
      frozen[i] = Tensor(v.dtype, t.dims);
      for (int64_t k = 0; k < past + tokens; ++k) {
        if (v.dtype == DType::Int64) frozen[i].data<int64_t>()[k] = 1;
        else if (v.dtype == DType::Int32) frozen[i].data<int32_t>()[k] = 1;
        else if (v.dtype == DType::Float32) frozen[i].data<float>()[k] = 1;
        else refuse("attention_mask is " + std::string(dtype_name(v.dtype)));
      }
    } else if (is_past) {
      if (!is_float_type(v.dtype)) refuse("the paged pool holds float keys and values, and '" + v.name + "' is " + dtype_name(v.dtype));
      const int64_t head_dim = v.shape && v.shape->size() == 4 && (*v.shape)[3].is_static() ? (*v.shape)[3].value : names.head_dim;
      if (!v.shape || v.shape->size() != 4 || !(*v.shape)[1].is_static() || head_dim <= 0)
        refuse("past input '" + v.name + "' is not [batch, kv_heads, past, head_dim] with fixed heads and head size");
      t.dims = {1, (*v.shape)[1].value, past, head_dim};
    } else {
      refuse("input '" + v.name + "' is not one a cached decoder step feeds");
    }
    types.push_back(t);
  }
  return {std::move(types), std::move(frozen)};
}

Probe bind_probe(const Graph& g, const DecoderGraphNames& names, int64_t tokens, int64_t past, EvaluateFn evaluate) {
  const ProbeInputs in = probe_inputs(g, names, tokens, past);
  try {
    return {tokens, past, bind_graph(g, in.types, in.frozen, evaluate)};
  } catch (const Error& e) {
    refuse("the step does not bind at " + std::to_string(tokens) + " tokens after " + std::to_string(past) + ": " + e.what());
  }
}

// ONNX Runtime's GroupQueryAttention, as the importer expands it, writes this step's keys into the
// past at each row's past length (a ScatterElements into the padded past) rather than
// concatenating. Evaluated at probe `p` (every token real) on distinct values, the nodes from
// `past` and `fresh` to `present` must give Concat(past, fresh) along the sequence axis exactly.
bool writes_like_concat(const Graph& g, const Probe& p, int present, int past, int fresh, EvaluateFn evaluate) {
  constexpr size_t kMaxNodes = 64;
  std::set<int> nodes;
  std::vector<int> stack = {present};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (v < 0 || v == past || v == fresh || (v != present && p.bound.is_constant(v))) continue;
    const int producer = g.values[static_cast<size_t>(v)].producer;
    if (producer < 0 || nodes.size() > kMaxNodes) return false;
    if (nodes.insert(producer).second)
      for (int in : g.nodes[static_cast<size_t>(producer)].inputs) stack.push_back(in);
  }
  auto distinct = [&](int v, float offset) {
    const TensorType& t = p.bound.types[static_cast<size_t>(v)];
    Tensor x(DType::Float32, t.dims);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = offset + static_cast<float>(i);
    return x;
  };
  if (p.bound.types[static_cast<size_t>(past)].dtype != DType::Float32) return false;
  std::map<int, Tensor> values = {{past, distinct(past, 1.0f)}, {fresh, distinct(fresh, 100000.0f)}};
  if (!run_nodes(g, p.bound, nodes, values, evaluate)) return false;
  const Tensor& got = values[present];
  const Tensor& a = values[past];
  const Tensor& b = values[fresh];
  if (got.dims() != Dims{1, a.dim(1), a.dim(2) + b.dim(2), a.dim(3)} || b.dim(1) != a.dim(1) || b.dim(3) != a.dim(3))
    return false;
  const int64_t heads = a.dim(1), pl = a.dim(2), nl = b.dim(2), d = a.dim(3);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < pl + nl; ++j)
      for (int64_t c = 0; c < d; ++c) {
        const float want = j < pl ? a.data<float>()[(h * pl + j) * d + c] : b.data<float>()[(h * nl + j - pl) * d + c];
        if (got.data<float>()[(h * (pl + nl) + j) * d + c] != want) return false;
      }
  return true;
}

// A Slice that keeps the last positions along the sequence axis (x[:, :, -kept:]): kept, else 0.
int64_t last_positions_kept(const Binding& b, const Node& n) {
  if (n.op != Op::Slice || n.inputs.size() < 4) return 0;
  auto value = [&](size_t i) -> std::optional<int64_t> {
    if (i >= n.inputs.size() || n.inputs[i] < 0 || !b.is_constant(n.inputs[i])) return std::nullopt;
    const Tensor& t = b.constants[static_cast<size_t>(n.inputs[i])];
    if (t.numel() != 1) return std::nullopt;
    if (t.dtype() == DType::Int64) return t.data<int64_t>()[0];
    if (t.dtype() == DType::Int32) return t.data<int32_t>()[0];
    return std::nullopt;
  };
  const auto start = value(1), end = value(2), axis = value(3);
  const auto step = n.inputs.size() > 4 && n.inputs[4] >= 0 ? value(4) : std::optional<int64_t>(1);
  const bool to_end = end && *end >= (int64_t{1} << 31);
  if (!start || *start >= 0 || !to_end || !axis || (*axis != 2 && *axis != -2) || step != 1) return 0;
  return -*start;
}

LayerMatch match_layer(const Graph& g, const std::vector<std::vector<int>>& consumers, const Probe& p,
                       const DecoderGraphNames& names, size_t layer, EvaluateFn evaluate) {
  LayerMatch m;
  const std::string what = "layer " + std::to_string(layer);
  auto concat_of = [&](const std::string& present_name, const std::string& past_name, int& present, int& fresh,
                       int& crop) {
    present = value_id(g, present_name, "output");
    const int past = value_id(g, past_name, "input");
    auto producer_of = [&](int v) {
      const int at = g.values[static_cast<size_t>(v)].producer;
      return at >= 0 ? &g.nodes[static_cast<size_t>(at)] : nullptr;
    };
    const Node* n = producer_of(present);
    // transformers 5's sliding-window cache: present = Concat(past[:, :, -kept:], new)[:, :, -kept:],
    // and the attention reads the Concat; `crop` becomes the node that reads it.
    if (n && last_positions_kept(p.bound, *n)) {
      crop = g.values[static_cast<size_t>(present)].producer;
      present = n->inputs[0];
      n = producer_of(present);
    }
    // TorchScript's GPT-J export casts the Concat to the type it has; the attention reads the Cast.
    if (n && n->op == Op::Cast &&
        p.bound.types[static_cast<size_t>(n->inputs[0])].dtype == p.bound.types[static_cast<size_t>(n->outputs[0])].dtype)
      n = producer_of(n->inputs[0]);
    int64_t axis = n ? n->attr_int("axis", 0) : 0;
    if (axis < 0) axis += 4;
    int first = n && !n->inputs.empty() ? n->inputs[0] : -1;
    for (int hop = 0; first >= 0 && hop < kMaxChain; ++hop) {  // through Identity (a one-input Concat was one)
      const Node* from = producer_of(first);
      if (!from) break;
      if (const int64_t kept = last_positions_kept(p.bound, *from)) {
        if (m.past_kept && m.past_kept != kept) refuse(what + " keeps different lengths of its past keys and values");
        m.past_kept = kept;
      } else if (from->op != Op::Identity) {
        break;
      }
      first = from->inputs[0];
    }
    if (n && n->op == Op::ScatterElements && n->inputs.size() == 3 && axis == 2 &&
        writes_like_concat(g, p, present, past, n->inputs[2], evaluate)) {
      fresh = n->inputs[2];
      return;
    }
    if (!n || n->op != Op::Concat || n->inputs.size() != 2 || first != past || axis != 2)
      refuse("'" + present_name + "' is not Concat('" + past_name + "', new) along the sequence axis");
    fresh = n->inputs[1];
  };
  concat_of(names.present_keys[layer], names.past_keys[layer], m.present_k, m.new_k, m.crop_k);
  concat_of(names.present_values[layer], names.past_values[layer], m.present_v, m.new_v, m.crop_v);
  // (Cast: a float16 model's keys and values reach the product in float32, passes/storage_types.h.)
  const std::set<Op> repeat = {Op::Unsqueeze, Op::Expand, Op::Reshape, Op::Transpose, Op::Identity, Op::Cast};
  std::set<Op> key_ops = repeat;
  key_ops.insert(Op::Mul);
  m.key_path = forward_path(g, consumers, p.bound, m.present_k, key_ops, Op::MatMul, what + "'s present key", m.crop_k);
  for (int idx : m.key_path) {  // torch's SDPA export: K * sqrt(scale), as Q is
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    if (n.op != Op::Mul) continue;
    auto known = [&](size_t i) { return i < n.inputs.size() && n.inputs[i] >= 0 && p.bound.is_constant(n.inputs[i]); };
    const Tensor* c = known(0) != known(1) ? &p.bound.constants[static_cast<size_t>(n.inputs[known(0) ? 0 : 1])] : nullptr;
    if (!c || !is_float_type(c->dtype()) || c->numel() != 1 || !(c->scalar_as_double(0) > 0))
      refuse(what + "'s keys are multiplied by something other than a positive constant in Mul '" + n.name + "'");
    m.key_scale *= static_cast<float>(c->scalar_as_double(0));
  }
  const Node& qk = g.nodes[static_cast<size_t>(m.key_path.back())];
  const int key_operand = m.key_path.size() > 1 ? g.nodes[static_cast<size_t>(m.key_path[m.key_path.size() - 2])].outputs[0] : m.present_k;
  if (qk.inputs.size() != 2 || qk.inputs[1] != key_operand) refuse(what + ": the keys are not the right operand of Q K^T");
  m.query = qk.inputs[0];
  m.scores = qk.outputs[0];
  m.key_path.pop_back();
  const std::set<Op> scoring = {Op::Div, Op::Mul, Op::Add, Op::Sub, Op::Where, Op::Cast, Op::Identity, Op::Tanh};
  m.score_path = forward_path(g, consumers, p.bound, qk.outputs[0], scoring, Op::Softmax, what + "'s scores");
  const Node& softmax = g.nodes[static_cast<size_t>(m.score_path.back())];
  int64_t axis = softmax.attr_int("axis", softmax.opset >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) refuse(what + ": the softmax is not over the key axis");
  m.score_path.pop_back();
  m.probs = softmax.outputs[0];
  std::tie(m.prob_nodes, m.product) = probability_nodes(g, consumers, p.bound, m.probs, what + "'s probabilities");
  m.value_path = forward_path(g, consumers, p.bound, m.present_v, repeat, Op::MatMul, what + "'s present value",
                              m.crop_v);
  if (m.value_path.back() != m.product) refuse(what + ": the values are not multiplied by the probabilities");
  m.value_path.pop_back();
  return m;
}

int add_input(Graph& g, const std::string& name, DType dtype, Shape shape) {
  if (g.find_value(name) >= 0) refuse("the model already has a value named '" + name + "'");
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  const int id = g.add_value(std::move(v));
  g.inputs.push_back(id);
  return id;
}

// A probe far into the context, 2 tokens after `past`: the longest past that binds (a sliding
// window as wide as most of the context shows only there), the context's own when it is known.
// None when no long past binds.
std::optional<Probe> bind_long_probe(const Graph& g, const DecoderGraphNames& names, int64_t context_length,
                                     EvaluateFn evaluate) {
  std::vector<int64_t> pasts = {4094, 2046, 1022, 510, 126};
  if (context_length > 8) pasts = {context_length - 2, context_length - 3};  // a table may end at the context
  for (int64_t past : pasts) {
    try {
      return bind_probe(g, names, 2, past, evaluate);
    } catch (const Error&) {  // positions past the model's own table: try a shorter past
    }
  }
  return std::nullopt;
}

// The values computed from `gone` ones (the past, the mask) that the rewritten graph still reads.
std::vector<bool> computed_from(const Graph& g, const std::set<int>& gone) {
  std::vector<bool> tainted(g.values.size(), false);
  for (int v : gone) tainted[static_cast<size_t>(v)] = true;
  for (const Node& n : g.nodes)
    if (std::any_of(n.inputs.begin(), n.inputs.end(), [&](int v) { return v >= 0 && tainted[static_cast<size_t>(v)]; }))
      for (int o : n.outputs)
        if (o >= 0) tainted[static_cast<size_t>(o)] = true;
  return tainted;
}

// Where `v` holds each token's position plus one offset at every probe (T elements along one axis,
// past + i + offset): the axis and the offset.
std::optional<std::pair<size_t, int64_t>> position_pattern(const Graph& g, int v, std::span<const Probe* const> probes) {
  std::optional<std::pair<size_t, int64_t>> found;
  for (const Probe* p : probes) {
    if (!p) continue;
    if (static_cast<size_t>(v) >= p->bound.constants.size() || !p->bound.is_constant(v)) return std::nullopt;
    const Tensor& t = p->bound.constants[static_cast<size_t>(v)];
    const DType d = t.dtype();
    if ((d != DType::Int64 && d != DType::Int32 && d != DType::Float32) || t.numel() != p->tokens) return std::nullopt;
    size_t axis = t.dims().size();
    for (size_t a = 0; a < t.dims().size(); ++a)
      if (t.dims()[a] != 1) axis = a;
    if (axis == t.dims().size()) axis = t.dims().empty() ? 0 : t.dims().size() - 1;  // one token
    if (t.dims().empty()) return std::nullopt;
    const double first = t.scalar_as_double(0) - static_cast<double>(p->past);
    if (first != std::round(first)) return std::nullopt;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.scalar_as_double(i) != static_cast<double>(p->past + i) + first) return std::nullopt;
    const auto offset = static_cast<int64_t>(first);
    if (found && (found->first != axis || found->second != offset)) return std::nullopt;
    found = std::pair{axis, offset};
  }
  return found;
}

// Adds node `op` reading `inputs` and writing a fresh value of type `dtype`; returns the value.
int constant_value(Graph& g, const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype();
  Shape shape;
  for (int64_t d : t.dims()) shape.push_back(Dim{d, ""});
  v.shape = shape;
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

// Every reader of `target` (and the graph's outputs) reads `value` instead; what fed only
// `target` becomes dead and goes.
void replace_value(Graph& g, int target, int value) {
  for (Node& n : g.nodes)
    for (int& v : n.inputs)
      if (v == target) v = value;
  std::replace(g.outputs.begin(), g.outputs.end(), target, value);
  g.reorder_nodes();
  remove_dead_nodes(g);
}

// The values that gave each token's position from the past's length or the mask (transformers 5's
// cache_position, ONNX Runtime GenAI's positions from seqlens_k, OPT's from the mask's cumsum)
// read position_ids instead: position_ids + offset, in the value's own shape and type, where it
// held exactly that at every probe. The first such value on each path is replaced; what fed it
// becomes dead.
void read_positions_from_input(Graph& g, const std::set<int>& gone, int positions, std::span<const Probe* const> probes) {
  for (size_t pass = 0; pass < g.nodes.size(); ++pass) {
    const std::vector<bool> tainted = computed_from(g, gone);
    int target = -1;
    std::pair<size_t, int64_t> pattern;
    for (const Node& n : g.nodes) {
      for (int v : n.inputs)
        if (v >= 0 && tainted[static_cast<size_t>(v)] && !gone.count(v))
          if (auto found = position_pattern(g, v, probes)) {
            target = v, pattern = *found;
            break;
          }
      if (target >= 0) break;
    }
    if (target < 0) return;
    const Value& old = g.values[static_cast<size_t>(target)];
    const std::string base = old.name + "/" + kCacheAttentionItem + "_position";
    const size_t rank = probes[0]->bound.constants[static_cast<size_t>(target)].dims().size();
    const DType dtype = probes[0]->bound.constants[static_cast<size_t>(target)].dtype();
    Tensor shape(DType::Int64, {static_cast<int64_t>(rank)});
    for (size_t a = 0; a < rank; ++a) shape.data<int64_t>()[a] = a == pattern.first ? -1 : 1;
    int value = append_node(g, Op::Reshape, {positions, constant_value(g, base + "_shape", std::move(shape))}, DType::Int64,
                            base + "_reshaped");
    if (pattern.second != 0) {
      Tensor offset(DType::Int64, {});
      offset.data<int64_t>()[0] = pattern.second;
      value = append_node(g, Op::Add, {value, constant_value(g, base + "_offset", std::move(offset))}, DType::Int64,
                          base + "_offset_added");
    }
    if (dtype != DType::Int64) value = append_cast(g, value, dtype, base + "_cast");
    replace_value(g, target, value);
  }
}

// Whether `v` held one small integer tensor, the same at every probe (a head count or a head size).
bool same_at_every_probe(int v, std::span<const Probe* const> probes) {
  constexpr int64_t kMaxElements = 8;
  const Tensor* first = nullptr;
  for (const Probe* p : probes) {
    if (!p) continue;
    if (static_cast<size_t>(v) >= p->bound.constants.size() || !p->bound.is_constant(v)) return false;
    const Tensor& t = p->bound.constants[static_cast<size_t>(v)];
    if ((t.dtype() != DType::Int64 && t.dtype() != DType::Int32) || t.numel() > kMaxElements) return false;
    if (!first) {
      first = &t;
      continue;
    }
    if (t.dims() != first->dims() || t.dtype() != first->dtype()) return false;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.scalar_as_double(i) != first->scalar_as_double(i)) return false;
  }
  return first != nullptr;
}

// The values computed from the past or the present that the rewritten graph still reads and that
// held the same small integer tensor at every probe become constants (torch's SDPA export reshapes
// the attention's output by the head size it reads off the repeated present's shape); what fed
// them becomes dead. The first such value on each path is replaced.
void freeze_probe_constants(Graph& g, const std::set<int>& gone, std::span<const Probe* const> probes) {
  for (size_t pass = 0; pass < g.nodes.size(); ++pass) {
    const std::vector<bool> tainted = computed_from(g, gone);
    int target = -1;
    for (const Node& n : g.nodes) {
      for (int v : n.inputs)
        if (v >= 0 && tainted[static_cast<size_t>(v)] && !gone.count(v) && same_at_every_probe(v, probes)) {
          target = v;
          break;
        }
      if (target >= 0) break;
    }
    if (target < 0) return;
    const std::string name = g.values[static_cast<size_t>(target)].name + "/" + kCacheAttentionItem + "_constant";
    const Probe* first = *std::find_if(probes.begin(), probes.end(), [](const Probe* p) { return p != nullptr; });
    replace_value(g, target, constant_value(g, name, first->bound.constants[static_cast<size_t>(target)]));
  }
}

}  // namespace

CachedDecoder prepare_cached_decoder(Graph& g, const DecoderGraphNames& names, EvaluateFn evaluate,
                                     int64_t context_length) {
  const size_t layers = names.past_keys.size();
  if (layers == 0 || names.past_values.size() != layers || names.present_keys.size() != layers ||
      names.present_values.size() != layers)
    refuse("the decoder names no cache layers");
  // transformers 5 exports Concat([past]), one input, before the real Concat(past, new).
  for (Node& n : g.nodes)
    if (n.op == Op::Concat && n.inputs.size() == 1) {
      n.op = Op::Identity;
      n.op_type = op_info(Op::Identity).name;
      n.attrs.clear();
    }
  // torch's dynamo exporter may read the batch size off a past tensor or the mask
  // (Shape(x)[0:1]); the batch is input_ids' dim 0 as well, which stays when they leave the graph.
  std::map<int, int64_t> leaving;  // value -> rank
  for (size_t layer = 0; layer < layers; ++layer)
    for (const std::string* name : {&names.past_keys[layer], &names.past_values[layer]}) leaving[g.find_value(*name)] = 4;
  if (int mask = g.find_value(names.attention_mask); mask >= 0) leaving[mask] = 2;
  const int ids = value_id(g, names.input_ids, "input");
  for (Node& n : g.nodes)
    if (auto it = leaving.find(n.inputs[0]); n.op == Op::Shape && it != leaving.end()) {
      const int64_t rank = it->second, start = n.attr_int("start", 0), end = n.attr_int("end", rank);
      if ((start == 0 || start == -rank) && (end == 1 || end == 1 - rank)) n.inputs[0] = ids;
    }
  remove_dead_nodes(g);  // only what reaches an output counts as a reader below
  // A step packs several sequences' tokens (and a plan's padding rows) into one input: one scale
  // over all of them would make each sequence's values depend on the others'.
  for (const Node& n : g.nodes)
    if (n.op == Op::DynamicQuantizeLinear)
      refuse(n.describe() + " takes one scale over all of a step's tokens, so sequences stepped together would change each "
             "other's outputs");
  // An export without position_ids (transformers 5 counts positions from the past's length, ONNX
  // Runtime GenAI's builder from the mask) gets the input: the cached attention reads it, and so
  // do the values that gave each token's position (read_positions_from_input).
  int positions = g.find_value(names.position_ids);
  if (positions < 0) positions = add_input(g, names.position_ids, DType::Int64, *g.values[static_cast<size_t>(ids)].shape);
  if (g.values[static_cast<size_t>(positions)].dtype != DType::Int64) refuse("position_ids is not int64");
  // float16 and bfloat16 compute in float32 (passes/storage_types.h), as the plan will run them:
  // the checks below evaluate float32 arithmetic, with the past, the present and this step's
  // keys and values in the model's type. (The reference kernels compute no float16.)
  if (std::any_of(g.inputs.begin(), g.inputs.end(), [&](int v) {
        const DType t = g.values[static_cast<size_t>(v)].dtype;
        return t == DType::Float16 || t == DType::BFloat16;
      })) {
    const ProbeInputs in = probe_inputs(g, names, 3, 0);
    try {
      g = Graph(*compute_storage_types_in_float32(std::make_shared<const Graph>(g), in.types, in.frozen, evaluate));
    } catch (const Error& e) {
      refuse(std::string("the float16 step does not compute in float32: ") + e.what());
    }
  }
  const auto consumers = g.consumers();

  // Two probes: a prefill (no past) and a step after a past, both with several tokens so that
  // causality shows.
  const Probe probes[2] = {bind_probe(g, names, 3, 0, evaluate), bind_probe(g, names, 2, 5, evaluate)};
  const std::optional<Probe> far = bind_long_probe(g, names, context_length, evaluate);
  // Where the export cuts a layer's past to its last `kept` positions (a sliding window's cache;
  // Gemma's alternate with full layers), a real past is never longer, and a probe at that past
  // shows the window even when the far one does not bind. A cut beyond the context never acts.
  auto cut_acts = [&](int64_t kept) { return kept > 0 && (context_length <= 0 || kept < context_length); };
  std::vector<LayerMatch> matches;  // at the first probe
  std::set<int64_t> cuts;
  for (size_t layer = 0; layer < layers; ++layer) {
    matches.push_back(match_layer(g, consumers, probes[0], names, layer, evaluate));
    if (cut_acts(matches.back().past_kept)) cuts.insert(matches.back().past_kept);
  }
  std::vector<Probe> cut_probes;
  for (int64_t kept : cuts) cut_probes.push_back(bind_probe(g, names, 2, kept, evaluate));
  std::vector<const Probe*> extra_probes = {far ? &*far : nullptr};
  for (const Probe& p : cut_probes) extra_probes.push_back(&p);
  std::vector<double> scales;
  std::vector<double> softcaps;
  std::vector<int64_t> windows;
  CachedDecoder out;
  for (size_t layer = 0; layer < layers; ++layer) {
    const std::string what = "layer " + std::to_string(layer);
    const LayerMatch& m = matches[layer];
    // The masks at every probe, and the widest sliding window they show (the far probe's, where
    // a window of most of the context shows).
    std::vector<std::pair<const Probe*, ScoreRun>> runs;
    for (const Probe& p : probes) runs.emplace_back(&p, run_scores(g, p, m, evaluate, what));
    for (const Probe* extra : extra_probes)
      if (extra) runs.emplace_back(extra, run_scores(g, *extra, m, evaluate, what));
    int64_t window = 0;
    for (const auto& [p, run] : runs) window = std::max(window, window_shown(run, *p));
    // Where the export cuts the past, the window must hide every key the cut drops.
    if (cut_acts(m.past_kept) && (window == 0 || window > m.past_kept + 1))
      refuse(what + " cuts its past to " + std::to_string(m.past_kept) + " positions, within its window");
    double scale = 0, softcap = 0;
    for (const auto& [p, run] : runs) {
      // With a softcap, check_scores finds the cap; the kernel's scale is then pre_scale * cap.
      const double c = check_scores(run, *p, window, what);
      const double s = run.pre_scale != 0 ? run.pre_scale * c : c;
      if (scale != 0 && std::fabs(s - scale) > run.tolerance * std::fabs(scale)) refuse(what + "'s scale depends on the shape");
      if ((run.pre_scale != 0) != (runs.front().second.pre_scale != 0)) refuse(what + "'s softcap depends on the shape");
      scale = s;
      if (run.pre_scale != 0) softcap = c;
    }
    for (const Probe& p : probes) {
      if (match_layer(g, consumers, p, names, layer, evaluate).product != m.product)
        refuse(what + " matches differently at another shape");
      const Dims& q = p.bound.types[static_cast<size_t>(m.query)].dims;
      const Dims& k = p.bound.types[static_cast<size_t>(m.new_k)].dims;
      if (q.size() != 4 || k.size() != 4 || q[0] != 1 || q[2] != p.tokens || k[2] != p.tokens || q[3] != k[3] ||
          k[1] <= 0 || q[1] % k[1] != 0 || p.bound.types[static_cast<size_t>(m.new_v)].dims != k)
        refuse(what + ": Q " + dims_to_string(q) + " and the new K " + dims_to_string(k) +
               " are not [1, heads, tokens, head_dim] with heads a multiple of the KV heads");
      out.heads = q[1], out.kv_heads = k[1], out.head_dim = k[3];
      check_head_repeat(g, p, m.key_path, m.present_k, q[1], true, m.key_scale, evaluate, what + "'s key path");
      check_head_repeat(g, p, m.value_path, m.present_v, q[1], false, 1, evaluate, what + "'s value path");
      check_probabilities_kept(g, p, m, evaluate, what + "'s probability path");
    }
    scales.push_back(scale);
    softcaps.push_back(softcap);
    windows.push_back(window);
  }

  // The new inputs: the pool per layer, shared by every token, and each token's block table.
  const Shape token_shape = *g.values[static_cast<size_t>(ids)].shape;
  // Keys transposed per block (ir/cached_attention_params.h).
  const Shape key_pool_shape = {Dim{-1, "kv_blocks"}, Dim{out.kv_heads, ""}, Dim{out.head_dim, ""}, Dim{-1, "kv_block_size"}};
  const Shape value_pool_shape = {Dim{-1, "kv_blocks"}, Dim{out.kv_heads, ""}, Dim{-1, "kv_block_size"}, Dim{out.head_dim, ""}};
  const int table = add_input(g, kBlockTable, DType::Int64, {token_shape[0], token_shape[1], Dim{-1, "kv_blocks_per_sequence"}});
  for (size_t layer = 0; layer < layers; ++layer) {
    const std::string p = "fusor.kv." + std::to_string(layer);
    out.key_caches.push_back(p + ".key");
    out.value_caches.push_back(p + ".value");
    const int kc = add_input(g, out.key_caches.back(), DType::Float32, key_pool_shape);
    const int vc = add_input(g, out.value_caches.back(), DType::Float32, value_pool_shape);
    const LayerMatch& m = matches[layer];
    // A float16 or bfloat16 model's queries, keys and values reach the float32 kernel through
    // Casts, and its output goes back to the model's type.
    const std::string base = g.nodes[static_cast<size_t>(m.product)].name + "/" + kCacheAttentionItem;
    auto as_float32_value = [&](int v, const char* what) {
      const DType t = probes[0].bound.types[static_cast<size_t>(v)].dtype;  // values declare no type
      return t == DType::Float32 ? v : append_cast(g, v, DType::Float32, base + "_" + what + "_float32");
    };
    const int q = as_float32_value(m.query, "query"), k = as_float32_value(m.new_k, "key"),
              v = as_float32_value(m.new_v, "value");
    const int product_out = g.nodes[static_cast<size_t>(m.product)].outputs[0];
    const DType out_type = probes[0].bound.types[static_cast<size_t>(product_out)].dtype;
    if (out_type != DType::Float32) {
      Value wide;
      wide.name = base + "_float32";
      wide.dtype = DType::Float32;
      const int wide_id = g.add_value(std::move(wide));
      g.nodes[static_cast<size_t>(m.product)].outputs = {wide_id};
      append_cast(g, wide_id, out_type, base + "_cast_back", product_out);
    }
    Node& n = g.nodes[static_cast<size_t>(m.product)];  // P V becomes the cached attention
    n.op = Op::CachedAttention;
    n.op_type = op_info(Op::CachedAttention).name;
    n.domain = "fusor";
    n.opset = 1;
    n.inputs = {q, k, v, positions, table, kc, vc};
    n.attrs = {{"num_heads", out.heads}, {"kv_heads", out.kv_heads},
               {"scale", static_cast<float>(scales[layer] * m.key_scale)}};
    if (windows[layer] > 0) n.attrs["window"] = windows[layer];
    if (softcaps[layer] > 0) n.attrs["softcap"] = static_cast<float>(softcaps[layer]);
    n.name = n.name + "/" + kCacheAttentionItem;
  }
  g.reorder_nodes();  // the Casts came last

  // The past, the present and the mask leave the graph; nothing may still read them.
  std::set<int> gone;
  for (size_t layer = 0; layer < layers; ++layer)
    for (const std::string* name : {&names.past_keys[layer], &names.past_values[layer], &names.present_keys[layer],
                                    &names.present_values[layer]})
      gone.insert(g.find_value(*name));
  if (int mask = g.find_value(names.attention_mask); mask >= 0) gone.insert(mask);
  std::erase_if(g.outputs, [&](int v) { return gone.count(v) > 0; });
  remove_dead_nodes(g);
  std::vector<const Probe*> bound = {&probes[0], &probes[1]};
  bound.insert(bound.end(), extra_probes.begin(), extra_probes.end());
  read_positions_from_input(g, gone, positions, bound);
  freeze_probe_constants(g, gone, bound);
  remove_dead_nodes(g);
  for (const Node& n : g.nodes)
    for (int v : n.inputs)
      if (gone.count(v))
        refuse(n.op_type + " '" + n.name + "' still reads '" + g.values[static_cast<size_t>(v)].name +
               "' outside the attention");
  std::erase_if(g.inputs, [&](int v) { return gone.count(v) > 0; });
  g.reorder_nodes();
  return out;
}

}  // namespace fusor
