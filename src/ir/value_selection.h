// What the data-dependent ops NonZero, Unique and Compress select from their input values. The
// shape function computes the selection for the output's shape and the reference kernel again
// for the values, so each stays independent like every other shape function and kernel pair.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// Flat row-major positions of the nonzero elements of `x` (NaN is nonzero, -0.0 is zero).
std::vector<int64_t> nonzero_positions(const Tensor& x, const Node& node);

// The distinct slices of `x` along `axis`, or its distinct elements (flattened) without one.
// Slices compare lexicographically in row-major order; NaN sorts last and equals NaN.
struct UniqueGroups {
  std::vector<int64_t> first;    // per distinct slice, in output order: where it first occurs
  std::vector<int64_t> counts;   // per distinct slice, in output order: how often it occurs
  std::vector<int64_t> inverse;  // per input slice: its distinct slice's output position
};
// `sorted`: output in ascending order, else in order of first occurrence. `axis` is normalized.
UniqueGroups unique_groups(const Tensor& x, std::optional<int64_t> axis, bool sorted, const Node& node);

// Positions along an axis of `extent` entries that the bool `condition` keeps (true). A shorter
// condition drops the entries past its end; a longer one fails naming the node.
std::vector<int64_t> compress_positions(const Tensor& condition, int64_t extent, const Node& node);

}  // namespace fusor
