#include "passes/pack_tokens.h"

#include <algorithm>
#include <limits>

#include "fusor/error.h"
#include "ir/bind.h"
#include "passes/fused_kinds.h"
#include "passes/token_locality.h"

namespace fusor {
namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw Error("cannot pack tokens: " + why, ErrorKind::UnsupportedOp);
}

bool is_input(const Graph& g, int id) { return std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end(); }

const Tensor* constant_of(const Graph& g, int id) {
  if (id < 0) return nullptr;
  const Value& v = g.values[static_cast<size_t>(id)];
  return v.constant ? &*v.constant : nullptr;
}

bool ints_equal(const Tensor* t, std::initializer_list<int64_t> want) {
  return t && (t->dtype() == DType::Int64 || t->dtype() == DType::Int32) && t->to_int64_vector() == std::vector<int64_t>(want);
}

enum class TableCut { None, Positions, Rows };

// Slice(table, starts 0, ends = the sequence length, one axis): a table cut to the sequence, which
// packed, would be cut to the whole T. Positions: HF BERT's position_ids buffer, [1, L] holding
// 0, 1, ..., L-1, cut along axis 1; its output is each token's position. Rows: a table cut along
// axis 0 ([L, ...], e.g. position embeddings in ONNX Runtime's EmbedLayerNormalization); row t is
// what token t at position t reads.
TableCut table_cut(const Graph& g, const Node& n) {
  if (n.op != Op::Slice || n.inputs.size() < 3 || n.opset < 10) return TableCut::None;
  const Tensor* table = constant_of(g, n.inputs[0]);
  const int axes = n.inputs.size() > 3 ? n.inputs[3] : -1, steps = n.inputs.size() > 4 ? n.inputs[4] : -1;
  if (!table || table->rank() < 1 || !ints_equal(constant_of(g, n.inputs[1]), {0}) || constant_of(g, n.inputs[2]) ||
      (steps >= 0 && !ints_equal(constant_of(g, steps), {1})))
    return TableCut::None;
  const Tensor* axis = constant_of(g, axes);
  if (axes < 0 || ints_equal(axis, {0})) return TableCut::Rows;
  const bool along_1 = ints_equal(axis, {1}) || ints_equal(axis, {-1});
  if (!along_1 || table->dtype() != DType::Int64 || table->rank() != 2 || table->dim(0) != 1) return TableCut::None;
  const int64_t* p = table->data<int64_t>();
  for (int64_t i = 0; i < table->numel(); ++i)
    if (p[i] != i) return TableCut::None;
  return TableCut::Positions;
}

int add_token_input(Graph& g, const char* name, const Shape& shape) {
  if (g.find_value(name) >= 0) refuse(std::string("the model already has a value named '") + name + "'");
  Value v;
  v.name = name;
  v.dtype = DType::Int64;
  v.shape = shape;
  int id = g.add_value(std::move(v));
  g.inputs.push_back(id);
  return id;
}

void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes) std::replace(n.inputs.begin(), n.inputs.end(), from, to);
  std::replace(g.outputs.begin(), g.outputs.end(), from, to);
}

int add_constant(Graph& g, const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = Shape{};
  for (int64_t d : t.dims()) v.shape->push_back(Dim{d, ""});
  v.constant = std::move(t);
  return g.add_value(std::move(v));
}

int add_intermediate(Graph& g, const std::string& name, DType dtype) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  return g.add_value(std::move(v));
}

Node make_node(const std::string& name, Op op, std::vector<int> inputs, int output) {
  Node n;
  n.name = name;
  n.op_type = op_info(op).name;
  n.op = op;
  n.opset = 13;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

// The attention body with the scores of other sequences' keys set to -inf before the softmax:
// Where(starts[q] == starts[k], scores, -inf). It takes the sequence starts as its last input.
std::shared_ptr<const Graph> with_sequence_mask(const Graph& body, const std::string& item) {
  Graph b = body;
  auto softmax = std::find_if(b.nodes.begin(), b.nodes.end(), [](const Node& n) { return n.op == Op::Softmax; });
  if (softmax == b.nodes.end()) refuse("attention '" + item + "' has no Softmax in its body");
  const int scores = softmax->inputs[0];
  const std::string p = item + ".packed.";
  const int starts = add_intermediate(b, p + "sequence_starts", DType::Int64);
  b.inputs.push_back(starts);
  auto shape = [&](const char* name, std::vector<int64_t> dims) {
    Tensor t(DType::Int64, {4});
    std::copy(dims.begin(), dims.end(), t.data<int64_t>());
    return add_constant(b, p + name, t);
  };
  Tensor inf(DType::Float32, {});
  *inf.data<float>() = -std::numeric_limits<float>::infinity();
  const int fill = add_constant(b, p + "fill", inf);
  const int as_queries = add_intermediate(b, p + "query_starts", DType::Int64);
  const int as_keys = add_intermediate(b, p + "key_starts", DType::Int64);
  const int same = add_intermediate(b, p + "same_sequence", DType::Bool);
  const int masked = add_intermediate(b, p + "scores", DType::Float32);
  std::vector<Node> added = {
      make_node(p + "query_starts", Op::Reshape, {starts, shape("query_shape", {1, 1, -1, 1})}, as_queries),
      make_node(p + "key_starts", Op::Reshape, {starts, shape("key_shape", {1, 1, 1, -1})}, as_keys),
      make_node(p + "same_sequence", Op::Equal, {as_queries, as_keys}, same),
      make_node(p + "scores", Op::Where, {same, scores, fill}, masked)};
  softmax->inputs[0] = masked;
  b.nodes.insert(softmax, added.begin(), added.end());
  b.reorder_nodes();
  return std::make_shared<const Graph>(std::move(b));
}

}  // namespace

PackedSignature prepare_packed_graph(Graph& g) {
  if (g.inputs.empty()) refuse("the model has no inputs");
  PackedSignature sig;
  const Shape* token_shape = nullptr;
  for (int id : g.inputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    const bool ids = v.dtype == DType::Int64 || v.dtype == DType::Int32;
    if (!ids || !v.shape || v.shape->size() != 2 || (*v.shape)[1].is_static())
      refuse("input '" + v.name + "' (" + dtype_name(v.dtype) + " " + (v.shape ? shape_to_string(*v.shape) : "?") +
             ") is not a [batch, sequence] tensor of token ids, mask or types");
    if (token_shape && (*token_shape)[1].symbol != (*v.shape)[1].symbol)
      refuse("inputs disagree on the sequence dimension ('" + (*token_shape)[1].symbol + "' and '" +
             (*v.shape)[1].symbol + "')");
    token_shape = &*v.shape;
    sig.token_inputs.push_back(v.name);
  }
  const Shape shape = *token_shape;  // add_value below may move the values
  if (int own = g.find_value(kModelPositionIds); own >= 0 && is_input(g, own)) {
    sig.positions = kModelPositionIds;
  } else {
    std::vector<std::pair<int, TableCut>> cuts;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (TableCut c = table_cut(g, g.nodes[i]); c != TableCut::None) cuts.emplace_back(static_cast<int>(i), c);
    if (!cuts.empty()) {
      const int positions = add_token_input(g, kPackedPositions, shape);
      for (auto [i, cut] : cuts) {
        Node& slice = g.nodes[static_cast<size_t>(i)];
        if (cut == TableCut::Positions) {
          replace_uses(g, slice.outputs[0], positions);
        } else {  // the Slice becomes Gather(table, positions): [1, T, ...] where it was [T, ...]
          slice.op = Op::Gather;
          slice.op_type = op_info(Op::Gather).name;
          slice.inputs = {slice.inputs[0], positions};
          slice.attrs = {{"axis", int64_t{0}}};
          slice.opset = 13;
        }
      }
      sig.positions = kPackedPositions;
    }
  }
  add_token_input(g, kPackedSequenceStarts, shape);
  sig.sequence_starts = kPackedSequenceStarts;
  return sig;
}

Graph pack_attention(const Graph& g, std::span<const TensorType> in_types, std::span<const Tensor> frozen,
                     EvaluateFn evaluate) {
  Graph out = g;
  const int starts = out.find_value(kPackedSequenceStarts);
  if (starts < 0) refuse("the graph was not prepared for packing");
  const Binding bound = bind_graph(out, in_types, frozen, evaluate);
  for (Node& n : out.nodes) {
    if (!is_fused_kind(n, FusedKind::Attention)) continue;
    if (n.attr_string("mask", "none") == "additive") {
      const Dims& md = bound.types[static_cast<size_t>(n.inputs[3])].dims;
      const Dims& qd = bound.types[static_cast<size_t>(n.inputs[0])].dims;
      const bool per_key = !md.empty() && qd.size() == 3 && md.back() == qd[1] &&
                           std::all_of(md.begin(), md.end() - 1, [](int64_t d) { return d == 1; });
      if (!per_key)
        refuse("attention '" + n.name + "' adds a mask " + dims_to_string(md) +
               " that is not one value per key (a padding mask [..., 1, sequence])");
    }
    n.attrs["segments"] = static_cast<int64_t>(n.inputs.size());
    n.inputs.push_back(starts);
    n.body = with_sequence_mask(*n.body, n.name);
  }
  if (auto why = token_locality_violation(out, in_types, frozen, evaluate)) refuse(*why);
  return out;
}

}  // namespace fusor
