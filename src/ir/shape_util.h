// Small helpers shared by shape functions and kernels: broadcasting, axis normalisation,
// strides, and the "one output like input i" shape rule.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// Numpy-style multidirectional broadcast; throws naming `node` when shapes are incompatible.
Dims broadcast_dims(const Dims& a, const Dims& b, const Node& node);
Dims broadcast_all(const std::vector<Dims>& shapes, const Node& node);

// Maps a possibly negative axis into [0, rank); throws naming `node` when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node);

// Row-major strides in elements.
std::vector<int64_t> strides_of(const Dims& dims);
// Strides of `in` broadcast to `out` (0 where `in` is broadcast); `in` is right-aligned.
std::vector<int64_t> broadcast_strides(const Dims& in, const Dims& out);

// Throws "<node>: <what>" with the node's name and op type.
[[noreturn]] void fail(const Node& node, const std::string& what, ErrorKind kind = ErrorKind::Runtime);

// Shape function result: one output with input i's type.
std::vector<TensorType> same_as_input(const InferContext& ctx, size_t i = 0);
// Requires the input at `i` to be a plan-time constant and returns it as int64 values.
std::vector<int64_t> constant_ints(const InferContext& ctx, size_t i, const char* what);

}  // namespace fusor
