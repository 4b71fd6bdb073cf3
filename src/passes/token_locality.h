// The proof behind packed execution (passes/pack_tokens.h): every step of a packed graph except
// attention computes token t of its output from token t of its inputs, so sequences laid end to
// end cannot see each other. The graph is bound at T tokens and again at T + 1: a computed value's
// token axis is the one dimension that grows by one, and only 1s may come before it (so token t
// is one contiguous row). Each op must then be one that works row by row along that axis:
// elementwise and broadcast ops, views and casts, embedding lookups, products with a constant
// weight over a feature axis, and normalizations and reductions over feature axes. Packed
// attention nodes (attribute `segments`) are exempt: they keep sequences apart themselves.
#pragma once
#include <optional>
#include <span>
#include <string>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace fusor {

// `in_types` bind every graph input as [1, T]. Returns why the graph is not token-local, or nothing.
std::optional<std::string> token_locality_violation(const Graph& g, std::span<const TensorType> in_types,
                                                    std::span<const Tensor> frozen, EvaluateFn evaluate);

}  // namespace fusor
