// TEMPORARY stubs until this op group is implemented; delete this file when done.
#include "ir/op_functions.h"
#include "ir/graph.h"

namespace fusor {
std::vector<TensorType> shape::Softmax(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Softmax(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::LogSoftmax(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::LogSoftmax(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::LayerNormalization(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::LayerNormalization(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::ReduceMean(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::ReduceMean(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::ReduceSum(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::ReduceSum(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::ReduceMax(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::ReduceMax(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::MatMul(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::MatMul(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Gemm(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Gemm(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Conv(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Conv(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::MaxPool(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::MaxPool(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::AveragePool(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::AveragePool(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::GlobalAveragePool(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::GlobalAveragePool(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
}  // namespace fusor
