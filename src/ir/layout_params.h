// Slice and Split parameters resolved against a concrete input shape. Shared by the shape
// functions (which see plan-time constants) and the reference kernels (which see the same
// values as tensors or attributes), so both agree on clamping and chunk sizes.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// Per input axis: first element, step and output extent. Axes the node does not name keep
// start 0, step 1 and their full extent.
struct SliceSpec {
  std::vector<int64_t> start;
  std::vector<int64_t> step;
  Dims out_dims;
};

// Implements ONNX Slice semantics: negative starts/ends count from the end, out-of-range values
// (including INT64_MIN/INT64_MAX) are clamped, negative steps walk backwards. `axes` empty means
// 0..len(starts)-1; `steps` empty means all ones. Throws naming `node` on bad arguments.
SliceSpec resolve_slice(const Node& node, const Dims& in, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                        std::vector<int64_t> steps);

// A Slice node's spec against `in`: its attributes before opset 10, else inputs 1-4, whose values
// `input(i)` gives (nullptr for an omitted one: that argument is then empty).
SliceSpec resolve_slice_node(const Node& node, const Dims& in, const std::function<const Tensor*(size_t)>& input);

// Sizes of each Split output along `dim`: explicit `split` sizes when given (must sum to dim),
// else opset-18 `num_outputs` chunks of ceil(dim/n) with a smaller last chunk, else equal parts.
std::vector<int64_t> resolve_split(const Node& node, int64_t dim, const std::vector<int64_t>* split,
                                   size_t num_outputs);

// Whether a Split node reads its sizes from input 1 (`given`: that input is there): from opset
// 13, and in opset 1, which took them either way (the input first); opsets 2-12 as an attribute.
bool split_sizes_from_input(const Node& node, bool given);
// The sizes input 1 holds: int64 or int32, or in opset 1 (typed as the data) whole numbers of
// any numeric type. Throws naming the node otherwise.
std::vector<int64_t> split_sizes_of(const Node& node, const Tensor& sizes);

}  // namespace fusor
