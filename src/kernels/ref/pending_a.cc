// TEMPORARY stubs until this op group is implemented; delete this file when done.
#include "ir/op_functions.h"
#include "ir/graph.h"

namespace fusor {
std::vector<TensorType> shape::Add(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Add(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Sub(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Sub(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Mul(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Mul(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Div(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Div(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Pow(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Pow(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Sqrt(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Sqrt(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Reciprocal(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Reciprocal(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Erf(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Erf(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Tanh(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Tanh(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Exp(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Exp(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Log(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Log(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Neg(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Neg(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Abs(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Abs(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Relu(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Relu(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Sigmoid(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Sigmoid(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Gelu(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Gelu(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Clip(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Clip(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::HardSigmoid(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::HardSigmoid(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::HardSwish(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::HardSwish(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::LeakyRelu(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::LeakyRelu(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Not(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Not(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Cast(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Cast(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Identity(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Identity(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Dropout(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Dropout(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Equal(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Equal(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Greater(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Greater(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Less(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Less(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Where(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Where(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Expand(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Expand(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::BatchNormalization(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::BatchNormalization(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
}  // namespace fusor
