// Ops as data: one row per op with its name, category and shape function: metadata only. The
// Op enum, the name strings and the op count all come from FUSOR_OPS, and so do the tables above
// ir (the reference kernels in kernels/ref/reference.h). Fusion rules are written over categories
// (TVM's pattern kinds), not over op names.
#pragma once
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "fusor/tensor.h"
#include "ir/elementwise_table.h"
#include "ir/op_rows_control.h"
#include "ir/op_rows_decode.h"
#include "ir/op_rows_dynamic.h"
#include "ir/op_rows_index.h"
#include "ir/op_rows_math.h"
#include "ir/op_rows_ml.h"
#include "ir/op_rows_movement.h"
#include "ir/op_rows_nn.h"
#include "ir/op_rows_quant.h"
#include "ir/op_rows_sequence.h"

namespace fusor {

struct Node;

enum class OpCategory { Elementwise, Broadcast, Injective, Reduction, Contraction, Opaque };
const char* category_name(OpCategory c);

// X(name, category). The unary elementwise ops come from the elementwise table
// (ir/elementwise_table.h), each as X(name, Elementwise); the later families from their own
// row lists (ir/op_rows_<family>.h), so that families grow without touching this list.
#define FUSOR_UNARY_AS_OP_(X, name, ...) X(name, Elementwise)
#define FUSOR_OPS(X)                                                                         \
  X(Add, Broadcast) X(Sub, Broadcast) X(Mul, Broadcast) X(Div, Broadcast) X(Pow, Broadcast)  \
  FUSOR_UNARY_ROWS(FUSOR_UNARY_AS_OP_, X)                                               \
  X(Not, Elementwise) X(Cast, Elementwise) X(Identity, Elementwise) X(Dropout, Elementwise)  \
  X(Equal, Broadcast) X(Greater, Broadcast) X(Less, Broadcast) X(Where, Broadcast)           \
  X(Softmax, Reduction) X(LogSoftmax, Reduction) X(LayerNormalization, Reduction)            \
  X(ReduceMean, Reduction) X(ReduceSum, Reduction) X(ReduceMax, Reduction)                   \
  X(MatMul, Contraction) X(Gemm, Contraction) X(Conv, Contraction)                           \
  X(BatchNormalization, Broadcast) X(MaxPool, Opaque) X(AveragePool, Opaque)                 \
  X(GlobalAveragePool, Reduction)                                                            \
  X(Transpose, Injective) X(Reshape, Injective) X(Flatten, Injective)                        \
  X(Squeeze, Injective) X(Unsqueeze, Injective) X(Concat, Injective) X(Split, Injective)     \
  X(Slice, Injective) X(Gather, Injective) X(Expand, Broadcast) X(Trilu, Injective)          \
  X(Shape, Opaque) X(ConstantOfShape, Opaque) X(Range, Opaque)                              \
  FUSOR_OPS_MATH(X) FUSOR_OPS_INDEX(X) FUSOR_OPS_MOVEMENT(X) FUSOR_OPS_NN(X)                 \
  FUSOR_OPS_SEQUENCE(X) FUSOR_OPS_CONTROL(X) FUSOR_OPS_QUANT(X) FUSOR_OPS_DYNAMIC(X)        \
  FUSOR_OPS_ML(X) FUSOR_OPS_DECODE(X)                                                        \
  X(Fused, Opaque)

enum class Op {
#define FUSOR_OP_ENUM(name, cat) name,
  FUSOR_OPS(FUSOR_OP_ENUM)
#undef FUSOR_OP_ENUM
  Count
};

// Concrete type of one tensor at plan time.
struct TensorType {
  DType dtype = DType::Undefined;
  Dims dims;
};

// Computes a node's outputs from inputs known at plan time: `outputs` arrive allocated with the
// shapes the shape function gave, missing optional inputs are undefined Tensors. Binding folds
// constants with it (ir/bind.h). The one evaluator is the reference kernels' ref::evaluate
// (kernels/ref/reference.h), a layer above ir, so callers pass it in.
using EvaluateFn = void (*)(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs);

// What a shape function sees: the node, its input types, and the values of inputs that are
// constant at plan time (nullptr otherwise). Missing optional inputs have dtype Undefined.
struct InferContext {
  const Node& node;
  std::span<const TensorType> inputs;
  std::span<const Tensor* const> constants;
  // For shape functions that bind a subgraph (a fused node's body); may be null for the others.
  EvaluateFn evaluate = nullptr;
  const Tensor* constant(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].dtype != DType::Undefined; }
};

// Returns one TensorType per node output, or throws fusor::Error naming the node.
using ShapeFn = std::vector<TensorType> (*)(const InferContext&);

struct OpInfo {
  Op op;
  const char* name;
  OpCategory category;
  ShapeFn infer;
};

const OpInfo& op_info(Op op);
// Whether running `op` writes some of its inputs in place (CachedAttention appends to the KV cache
// it is given): such a node is never folded at plan time, even when all its inputs are constant.
bool op_writes_inputs(Op op);
std::optional<Op> op_from_name(std::string_view name);
std::span<const OpInfo> all_ops();

}  // namespace fusor
