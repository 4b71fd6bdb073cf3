// Small questions pattern passes ask about the graph around a node.
#pragma once
#include <optional>
#include <vector>

#include "passes/fusion_context.h"

namespace fusor::match {

// The one node that reads `value` when it is exactly one node of op `op` (any op when Count)
// and `value` is not a graph output; -1 otherwise.
int only_consumer(const FusionContext& ctx, int value, Op op = Op::Count);
// The node that makes `value` if it has op `op`; -1 otherwise.
int producer_of(const FusionContext& ctx, int value, Op op);
// The value of a one-element float constant (plan-time constants included).
std::optional<double> scalar(const FusionContext& ctx, int value);
// `node`'s input other than `value` for a two-input node; -1 when `value` is not one of them.
int other_input(const Node& node, int value);
// |a - b| <= tol * |b|
bool near(double a, double b, double tol = 1e-5);
// Reduction axes of a ReduceMean/ReduceSum node (attribute or opset-18 input), normalized to
// [0, rank) and sorted; nullopt when they are not known at plan time.
std::optional<std::vector<int64_t>> reduce_axes(const FusionContext& ctx, const Node& node, size_t rank);

}  // namespace fusor::match
