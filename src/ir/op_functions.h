// Declarations of every op's shape function (fusor::shape::<Op>), generated from FUSOR_OPS so
// that adding an op is one row there plus its definition, in src/ir/shapes_*.cc grouped by op
// family. (Reference kernels are declared the same way in kernels/ref/reference.h.)
#pragma once
#include "ir/op_table.h"

namespace fusor::shape {
#define FUSOR_DECLARE_SHAPE_FN(name, cat) std::vector<TensorType> name(const InferContext& ctx);
FUSOR_OPS(FUSOR_DECLARE_SHAPE_FN)
#undef FUSOR_DECLARE_SHAPE_FN
}  // namespace fusor::shape
