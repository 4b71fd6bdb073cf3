// Declarations of every op's shape function (fusor::shape::<Op>) and reference kernel
// (fusor::ref::<Op>), generated from FUSOR_OPS so that adding an op is one row there plus
// its two definitions. Shape functions live in src/ir/shapes_*.cc, reference kernels in
// src/kernels/ref/*.cc, grouped by op family.
#pragma once
#include "ir/op_table.h"

namespace fusor {
namespace shape {
#define FUSOR_DECLARE_SHAPE_FN(name, cat) std::vector<TensorType> name(const InferContext& ctx);
FUSOR_OPS(FUSOR_DECLARE_SHAPE_FN)
#undef FUSOR_DECLARE_SHAPE_FN
}  // namespace shape

namespace ref {
#define FUSOR_DECLARE_REF_FN(name, cat) \
  void name(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs);
FUSOR_OPS(FUSOR_DECLARE_REF_FN)
#undef FUSOR_DECLARE_REF_FN
}  // namespace ref
}  // namespace fusor
