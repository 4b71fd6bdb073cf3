#include "ir/data_dependent.h"

namespace fusor {

const Tensor& known_value(const InferContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.constant(i);
  if (!t)
    throw DataDependentShape(ctx.node.describe() + ": " + what + " must be known when the plan is built (input " +
                             std::to_string(i) + " is computed at run time)");
  return *t;
}

}  // namespace fusor
