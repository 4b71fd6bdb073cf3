#include "passes/logit_rows.h"

#include <algorithm>
#include <map>

#include "fusor/error.h"
#include "ir/elementwise.h"

namespace fusor {

namespace {

// What the probes say about a value's axes.
struct TokenAxes {
  std::span<const TokenProbe> probes;

  size_t rank(int v) const { return probes[0].types[static_cast<size_t>(v)].dims.size(); }
  // [batch, tokens, ...] at every probe.
  bool has_token_rows(int v) const {
    for (const TokenProbe& p : probes) {
      const Dims& d = p.types[static_cast<size_t>(v)].dims;
      if (d.size() < 3 || d[1] != p.tokens) return false;
    }
    return true;
  }
  // Broadcast along axis 1 of an output of rank `rank`: the axis it aligns with is absent or 1.
  bool broadcasts_over_tokens(int v, size_t out_rank) const {
    for (const TokenProbe& p : probes) {
      const Dims& d = p.types[static_cast<size_t>(v)].dims;
      if (d.size() > out_rank) return false;
      const size_t missing = out_rank - d.size();
      if (missing <= 1 && d[1 - missing] != 1) return false;
    }
    return true;
  }
};

bool is_elementwise(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
    case Op::Equal: case Op::Greater: case Op::Less: case Op::Where:
    case Op::Cast: case Op::Identity: case Op::Not:
      return true;
    default:
      return is_unary_table_op(op);
  }
}

bool is_reduction(Op op) { return op == Op::ReduceMean || op == Op::ReduceSum || op == Op::ReduceMax; }

// Whether a reduction or normalization works within each token's row: every axis it reduces or
// normalizes comes after the token axis, and a reduction keeps its rank.
bool within_rows(const Graph& g, const Node& n, size_t rank) {
  std::vector<int64_t> axes;
  if (n.op == Op::Softmax || n.op == Op::LogSoftmax) {
    axes = {n.attr_int("axis", n.opset >= 13 ? -1 : 1)};  // before 13: the rows of a 2-D coercion at axis
  } else if (n.op == Op::LayerNormalization) {
    axes = {n.attr_int("axis", -1)};
  } else if (is_reduction(n.op)) {
    if (n.attr_int("keepdims", 1) == 0) return false;
    if (n.has_attr("axes")) {
      axes = n.attr_ints("axes");
    } else if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
      const std::optional<Tensor>& c = g.values[static_cast<size_t>(n.inputs[1])].constant;
      if (!c || c->dtype() != DType::Int64) return false;
      axes.assign(c->data<int64_t>(), c->data<int64_t>() + c->numel());
    }
    if (axes.empty()) return false;  // every axis, or none
  } else {
    return false;
  }
  for (int64_t a : axes) {
    if (a < 0) a += static_cast<int64_t>(rank);
    if (a < 2 || a >= static_cast<int64_t>(rank)) return false;
  }
  return true;
}

// Whether node `n` can run on the gathered rows: its outputs have token rows that only `taken`
// nodes read (or are `logits`), and each output row depends on the same row of its inputs alone.
bool works_row_by_row(const Graph& g, size_t n, const TokenAxes& axes, const std::vector<std::vector<int>>& consumers,
                      const std::vector<char>& taken, int logits) {
  const Node& node = g.nodes[n];
  size_t rank = 0;
  for (int o : node.outputs) {
    if (o < 0) continue;
    if (!axes.has_token_rows(o)) return false;
    if (o != logits && std::find(g.outputs.begin(), g.outputs.end(), o) != g.outputs.end()) return false;
    for (int c : consumers[static_cast<size_t>(o)])
      if (!taken[static_cast<size_t>(c)]) return false;
    rank = axes.rank(o);
  }
  if (rank == 0) return false;
  if (node.op == Op::MatMul) {
    const Value& b = g.values[static_cast<size_t>(node.inputs[1])];
    return b.constant && b.constant->dims().size() == 2 && axes.has_token_rows(node.inputs[0]) &&
           axes.rank(node.inputs[0]) == rank;
  }
  if (!is_elementwise(node.op) && !within_rows(g, node, rank)) return false;
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    const int v = node.inputs[j];
    if (v < 0 || (is_reduction(node.op) && j == 1)) continue;
    if (!(axes.has_token_rows(v) && axes.rank(v) == rank) && !axes.broadcasts_over_tokens(v, rank)) return false;
  }
  return true;
}

}  // namespace

bool gather_logit_rows(Graph& g, const std::string& logits, std::span<const TokenProbe> probes,
                       const std::string& rows_input) {
  const int out = g.find_value(logits);
  if (out < 0 || g.find_value(rows_input) >= 0) return false;
  if (probes.size() < 2 || probes[0].tokens == probes[1].tokens)
    throw Error("gather_logit_rows needs two probes with different token counts");
  for (const TokenProbe& p : probes)
    if (p.types.size() != g.values.size()) throw Error("gather_logit_rows: a probe is not of this graph");
  const TokenAxes axes{probes};
  std::vector<int> producer(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int o : g.nodes[n].outputs)
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<int>(n);

  // Grow the taken set up from the logits until it stops: a node joins once all its readers have.
  const std::vector<std::vector<int>> consumers = g.consumers();
  std::vector<char> taken(g.nodes.size(), 0);
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t n = g.nodes.size(); n-- > 0;)
      if (!taken[n] && works_row_by_row(g, n, axes, consumers, taken, out)) taken[n] = grew = true;
  }
  // Exports often end in a Cast (to float, of float) after the head: elementwise, so row-wise.
  int head = producer[static_cast<size_t>(out)];
  while (head >= 0 && (g.nodes[static_cast<size_t>(head)].op == Op::Cast ||
                       g.nodes[static_cast<size_t>(head)].op == Op::Identity))
    head = producer[static_cast<size_t>(g.nodes[static_cast<size_t>(head)].inputs[0])];
  if (head < 0 || g.nodes[static_cast<size_t>(head)].op != Op::MatMul || !taken[static_cast<size_t>(head)])
    return false;

  Value rows;
  rows.name = rows_input;
  rows.dtype = DType::Int64;
  rows.shape = Shape{Dim{-1, "logit_rows"}};
  const int rows_id = g.add_value(std::move(rows));
  g.inputs.push_back(rows_id);
  std::map<int, int> gathered;  // a token-row value read from outside -> its gathered rows
  auto gather = [&](int v) {
    auto found = gathered.find(v);
    if (found != gathered.end()) return found->second;
    Value rowsof;
    rowsof.name = rows_input + ":" + g.values[static_cast<size_t>(v)].name;
    rowsof.dtype = g.values[static_cast<size_t>(v)].dtype;
    rowsof.shape = g.values[static_cast<size_t>(v)].shape;
    if (rowsof.shape && rowsof.shape->size() >= 2) (*rowsof.shape)[1] = Dim{-1, "logit_rows"};
    const int id = g.add_value(std::move(rowsof));
    Node node;
    node.name = rows_input + "/gather:" + g.values[static_cast<size_t>(v)].name;
    node.op = Op::Gather;
    node.op_type = op_info(Op::Gather).name;
    node.opset = static_cast<int>(g.opset);
    node.inputs = {v, rows_id};
    node.outputs = {id};
    node.attrs = {{"axis", int64_t{1}}};
    g.nodes.push_back(std::move(node));
    return gathered[v] = id;
  };
  const size_t original_nodes = taken.size();
  for (size_t n = 0; n < original_nodes; ++n) {
    if (!taken[n]) continue;
    const size_t rank = axes.rank(g.nodes[n].outputs[0]);
    for (size_t j = 0; j < g.nodes[n].inputs.size(); ++j) {
      const int v = g.nodes[n].inputs[j];
      if (v < 0 || !axes.has_token_rows(v) || axes.rank(v) != rank) continue;
      const int from = producer[static_cast<size_t>(v)];
      if (from >= 0 && taken[static_cast<size_t>(from)]) continue;  // computed on the rows already
      const int id = gather(v);
      g.nodes[n].inputs[j] = id;
    }
    for (int o : g.nodes[n].outputs) {
      if (o < 0) continue;
      std::optional<Shape>& shape = g.values[static_cast<size_t>(o)].shape;
      if (shape && shape->size() >= 2) (*shape)[1] = Dim{-1, "logit_rows"};
    }
  }
  g.reorder_nodes();
  return true;
}

}  // namespace fusor
