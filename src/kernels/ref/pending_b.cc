// TEMPORARY stubs until this op group is implemented; delete this file when done.
#include "ir/op_functions.h"
#include "ir/graph.h"

namespace fusor {
std::vector<TensorType> shape::Transpose(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Transpose(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Reshape(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Reshape(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Flatten(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Flatten(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Squeeze(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Squeeze(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Unsqueeze(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Unsqueeze(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Concat(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Concat(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Split(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Split(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Slice(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Slice(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Gather(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Gather(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Trilu(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Trilu(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Shape(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Shape(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::ConstantOfShape(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::ConstantOfShape(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
std::vector<TensorType> shape::Range(const InferContext& c) { throw Error(c.node.describe() + ": not implemented"); }
void ref::Range(const Node& n, std::span<const Tensor>, std::span<Tensor>) { throw Error(n.describe() + ": not implemented"); }
}  // namespace fusor
