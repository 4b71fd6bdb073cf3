// float16 and bfloat16 are storage types: fusor keeps them in memory and moves them, but computes
// them in float32. This pass makes that explicit before a plan binds its graph, for both
// executors: every node that would compute on a storage-typed input reads it through a Cast to
// float32, and each of its float32 results goes through a Cast back to the storage type. Ops
// that only move or reinterpret bytes (Reshape, Transpose, Concat, Slice, Gather, ...), Shape
// and Size, the casts themselves, and QLinearMatMul (integer in and out, its float16 scales
// rounding as ONNX's reference does) keep the storage types. The fusion passes then see float32.
#pragma once
#include <memory>
#include <span>

#include "ir/graph.h"

namespace fusor {

// Returns `graph` itself when no value of it can hold a storage type; else the rewritten copy.
// `input_types[i]` and `frozen[i]` belong to graph.inputs[i]; constants fold with `evaluate`, as
// in bind_graph, since shape functions need the values of shape inputs.
std::shared_ptr<const Graph> compute_storage_types_in_float32(std::shared_ptr<const Graph> graph,
                                                              std::span<const TensorType> input_types,
                                                              std::span<const Tensor> frozen, EvaluateFn evaluate);

// Whether `op` works on float16 and bfloat16 as they are (moves bytes, or converts).
bool keeps_storage_types(Op op);

}  // namespace fusor
