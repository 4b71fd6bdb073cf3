// Generic elementwise fusion: any connected DAG of Elementwise and Broadcast ops (and GELUs the
// pattern pass already fused) becomes one "Elementwise" node, whose kernel runs the DAG as a
// register program over L1-sized tiles (kernels/cpu/fused_elementwise.cc). It runs last, on
// what the pattern passes left.
//
// Why this grouping: seeds are taken in topological order, and a group grows greedily over
// producer and consumer edges one node at a time. A node stays only when the grown group is
// still legal (no cycle, see legality.h), bounded (kMaxNodes) and well shaped: every value that
// leaves the group is float32 and has the group's iteration shape (the broadcast of all its
// members' outputs), so the kernel writes whole tensors and each input broadcasts into them.
// A node that does not fit alone is tried once more together with its own neighbours (a Cast to
// bool with the Cast back), and growth repeats until nothing more joins, because a node refused
// early (a compare whose bool result would leave the group) may fit once its consumer joined.
// Values used both inside and outside become extra outputs. Nodes that fold at plan time are
// left to folding.
#include <algorithm>
#include <map>
#include <set>

#include "ir/elementwise.h"
#include "ir/graph_edit.h"
#include "passes/fused_elementwise_ops.h"
#include "passes/passes.h"

namespace fusor::passes {
namespace {

constexpr const char* kPass = "fuse_elementwise";
constexpr size_t kMaxNodes = 32;
constexpr int64_t kMaxRecompute = 4;  // an expensive member's output may broadcast this much

std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

bool is_float_or_bool(const FusionContext& ctx, int v) {
  return v >= 0 && (ctx.type(v).dtype == DType::Float32 || ctx.type(v).dtype == DType::Bool);
}

bool is_quantized(const FusionContext& ctx, int v) {
  return v >= 0 && (ctx.type(v).dtype == DType::UInt8 || ctx.type(v).dtype == DType::Int8);
}

// A QDQ model's activations: a per-tensor DequantizeLinear from, or QuantizeLinear to, uint8/int8.
std::optional<std::string> quantization_problem(const FusionContext& ctx, const Node& n) {
  const bool dq = n.op == Op::DequantizeLinear;
  if (!is_quantized(ctx, dq ? n.inputs[0] : n.outputs[0]))
    return n.describe() + (dq ? " reads " : " makes ") + dtype_name(ctx.type(dq ? n.inputs[0] : n.outputs[0]).dtype) +
           ", not uint8 or int8";
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (n.inputs[k] >= 0 && !(ctx.constant(n.inputs[k]) && ctx.constant(n.inputs[k])->numel() == 1))
      return n.describe() + " is not per-tensor with constant parameters";
  return std::nullopt;
}

// Why node `i` cannot be a member: empty for nodes that are simply not elementwise (not worth a
// report), a reason for elementwise nodes of a kind the kernel does not run; nullopt when it can.
// The ops it runs are fused_elementwise_runs's, the test its program compiler applies too.
std::optional<std::string> member_problem(const FusionContext& ctx, int i) {
  const Node& n = ctx.node(i);
  if (!fused_elementwise_runs(n)) {
    OpCategory c = n.op == Op::Fused ? OpCategory::Opaque : op_info(n.op).category;
    if ((c != OpCategory::Elementwise && c != OpCategory::Broadcast) || n.op == Op::Expand ||
        n.op == Op::BatchNormalization || ctx.binding().folded(n))
      return std::string();
    return n.describe() + " is not an op the fused elementwise kernel runs";
  }
  if (ctx.binding().folded(n)) return std::string();
  if (n.outputs.empty() || n.outputs[0] < 0 || std::any_of(n.outputs.begin() + 1, n.outputs.end(), [](int v) { return v >= 0; }))
    return n.describe() + " does not make exactly one output";
  const int out = n.outputs[0];
  if (n.op == Op::DequantizeLinear || n.op == Op::QuantizeLinear) return quantization_problem(ctx, n);
  if (!is_float_or_bool(ctx, out)) return n.describe() + " makes " + dtype_name(ctx.type(out).dtype) + ", not float32 or bool";
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const int v = n.inputs[k];
    if (v < 0 || is_float_or_bool(ctx, v)) continue;
    const bool scalar_constant = ctx.constant(v) && ctx.constant(v)->numel() == 1;
    const bool int_cast = n.op == Op::Cast && (ctx.type(v).dtype == DType::Int32 || ctx.type(v).dtype == DType::Int64);
    const bool attr_like = (n.op == Op::Pow || n.op == Op::Clip || n.op == Op::Dropout || n.op == Op::Fused) && k > 0;
    if (int_cast || (attr_like && scalar_constant)) continue;
    return n.describe() + " reads " + dtype_name(ctx.type(v).dtype) + " input '" +
           ctx.graph().values[static_cast<size_t>(v)].name + "'";
  }
  return std::nullopt;
}

// Why `nodes` cannot be one Elementwise node, or nullopt.
std::optional<std::string> why_not_group(const FusionContext& ctx, const std::vector<int>& nodes) {
  if (nodes.size() > kMaxNodes) return "the group would exceed " + std::to_string(kMaxNodes) + " nodes";
  if (auto why = why_not_legal(ctx.graph(), nodes, {.allow_extra_outputs = true})) return why;
  Dims iter;
  for (int n : nodes) {
    const Dims& d = ctx.type(ctx.node(n).outputs[0]).dims;
    auto b = broadcast(iter, d);
    if (!b) return "shapes " + dims_to_string(iter) + " and " + dims_to_string(d) + " do not broadcast";
    iter = *b;
  }
  // Bounded recomputation: the kernel computes every member at the iteration shape, so a small
  // value made by an expensive op would be recomputed for every element it broadcasts to.
  for (int n : nodes) {
    const Node& node = ctx.node(n);
    const bool expensive = node.op == Op::Fused || elementwise_cost(node.op).expensive;
    if (expensive && numel_of(ctx.type(node.outputs[0]).dims) * kMaxRecompute < numel_of(iter))
      return node.describe() + " would be recomputed for every element of " + dims_to_string(iter);
  }
  FusedBoundary boundary = fused_boundary(ctx.graph(), nodes);
  for (int v : boundary.inputs)
    if (!broadcast(ctx.type(v).dims, iter) || *broadcast(ctx.type(v).dims, iter) != iter)
      return "input '" + ctx.graph().values[static_cast<size_t>(v)].name + "' " + dims_to_string(ctx.type(v).dims) +
             " does not broadcast to the iteration shape " + dims_to_string(iter);
  for (int v : boundary.outputs) {
    const TensorType& t = ctx.type(v);
    const std::string name = "'" + ctx.graph().values[static_cast<size_t>(v)].name + "'";
    const int producer = ctx.graph().values[static_cast<size_t>(v)].producer;
    const bool quantized = producer >= 0 && ctx.node(producer).op == Op::QuantizeLinear;
    // Its readers dequantize a quantized value themselves: writing it out as float32 would move
    // four times the bytes (the next residual block's copy of its input).
    if (producer >= 0 && ctx.node(producer).op == Op::DequantizeLinear)
      return name + " would leave the group dequantized; its readers dequantize it themselves";
    if (t.dtype != DType::Float32 && !quantized)
      return name + " would leave the group as " + dtype_name(t.dtype) + ", not float32";
    if (t.dims != iter)
      return name + " would leave the group with shape " + dims_to_string(t.dims) + ", not the iteration shape " +
             dims_to_string(iter);
  }
  return std::nullopt;
}

// Nodes next to the group: producers of its inputs and consumers of its outputs, in order.
std::vector<int> neighbours(const FusionContext& ctx, const std::vector<int>& group) {
  std::set<int> in_group(group.begin(), group.end()), out;
  for (int n : group) {
    for (int v : ctx.node(n).inputs)
      if (v >= 0 && ctx.graph().values[static_cast<size_t>(v)].producer >= 0)
        out.insert(ctx.graph().values[static_cast<size_t>(v)].producer);
    for (int v : ctx.node(n).outputs)
      if (v >= 0)
        for (int c : ctx.consumers(v)) out.insert(c);
  }
  std::vector<int> result;
  for (int n : out)
    if (!in_group.count(n)) result.push_back(n);
  return result;
}

// Group members that share a value with node `c`.
std::vector<int> adjacent(const FusionContext& ctx, const std::vector<int>& group, int c) {
  std::vector<int> result;
  for (int n : group)
    if (std::ranges::count(neighbours(ctx, {n}), c)) result.push_back(n);
  return result;
}

int key_of(const FusionContext& ctx, int n) { return ctx.node(n).outputs.empty() ? -1 : ctx.node(n).outputs[0]; }

}  // namespace

void fuse_elementwise(FusionContext& ctx) {
  // Nodes already placed in a group or examined, by their first output's value id (value ids
  // survive fuse(), node indices do not).
  std::set<int> taken;
  for (int seed = 0; seed < static_cast<int>(ctx.graph().nodes.size()); ++seed) {
    if (taken.count(key_of(ctx, seed)) || member_problem(ctx, seed)) continue;
    std::vector<int> group{seed};
    std::map<int, std::string> refused;  // candidate -> why it did not join
    for (bool grew = true; grew;) {
      grew = false;
      for (int c : neighbours(ctx, group)) {
        if (taken.count(key_of(ctx, c)) || std::ranges::count(group, c)) continue;
        if (auto problem = member_problem(ctx, c)) {
          if (!problem->empty()) refused[c] = *problem;
          continue;
        }
        group.push_back(c);
        if (auto why = why_not_group(ctx, group)) {
          // One step of lookahead: c may fit together with its own neighbours (a Cast to bool
          // with the Cast back, a node whose other input comes from c's producer).
          const size_t size = group.size();
          for (int d : neighbours(ctx, {c}))
            if (!taken.count(key_of(ctx, d)) && !std::ranges::count(group, d) && !member_problem(ctx, d))
              group.push_back(d);
          if (group.size() == size || why_not_group(ctx, group)) {
            group.resize(size - 1);
            refused[c] = *why;
            continue;
          }
          for (size_t k = size - 1; k < group.size(); ++k) refused.erase(group[k]);
        }
        refused.erase(c);
        grew = true;
      }
    }
    for (int n : group) taken.insert(key_of(ctx, n));
    for (const auto& [c, why] : refused) {
      std::vector<int> nodes = adjacent(ctx, group, c);
      nodes.push_back(c);
      ctx.decline(kPass, nodes, why);
    }
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end());
    if (intermediate_bytes_saved(ctx.graph(), ctx.binding(), group) == 0) {
      ctx.decline(kPass, group, "every intermediate is also used outside the group: no traffic saved");
      continue;
    }
    // fuse() renumbers the nodes: scan again from the start (taken nodes are skipped).
    if (ctx.fuse(kPass, group, FusedKind::Elementwise, "elementwise", {}, {.allow_extra_outputs = true})) seed = -1;
  }
}

}  // namespace fusor::passes
