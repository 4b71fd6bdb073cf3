#include "passes/match.h"

#include <algorithm>
#include <cmath>

namespace fusor::match {

int only_consumer(const FusionContext& ctx, int value, Op op) {
  const Graph& g = ctx.graph();
  if (std::find(g.outputs.begin(), g.outputs.end(), value) != g.outputs.end()) return -1;
  const auto& users = ctx.consumers(value);
  if (users.size() != 1) return -1;
  return op == Op::Count || ctx.node(users[0]).op == op ? users[0] : -1;
}

int producer_of(const FusionContext& ctx, int value, Op op) {
  if (value < 0) return -1;
  int p = ctx.graph().values[static_cast<size_t>(value)].producer;
  return p >= 0 && ctx.node(p).op == op ? p : -1;
}

std::optional<double> scalar(const FusionContext& ctx, int value) {
  const Tensor* t = ctx.constant(value);
  if (!t || t->numel() != 1 || (t->dtype() != DType::Float32 && t->dtype() != DType::Float64)) return std::nullopt;
  return t->scalar_as_double();
}

int other_input(const Node& node, int value) {
  if (node.inputs.size() != 2) return -1;
  if (node.inputs[0] == value) return node.inputs[1];
  if (node.inputs[1] == value) return node.inputs[0];
  return -1;
}

bool near(double a, double b, double tol) { return std::abs(a - b) <= tol * std::abs(b); }

std::optional<std::vector<int64_t>> reduce_axes(const FusionContext& ctx, const Node& node, size_t rank) {
  std::vector<int64_t> axes;
  // The axes input exists from opset 18 on (13 for ReduceSum); before, only the attribute.
  const int input_from = node.op == Op::ReduceSum ? 13 : 18;
  if (node.opset >= input_from && node.inputs.size() > 1 && node.inputs[1] >= 0) {
    const Tensor* t = ctx.constant(node.inputs[1]);
    if (!t) return std::nullopt;
    for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(t->data<int64_t>()[i]);
  } else {
    axes = node.attr_ints("axes");
  }
  if (axes.empty())  // all axes
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  for (int64_t& a : axes) a = a < 0 ? a + static_cast<int64_t>(rank) : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

}  // namespace fusor::match
