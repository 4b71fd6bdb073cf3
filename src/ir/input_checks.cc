#include "ir/input_checks.h"

#include <string>

#include "ir/shape_util.h"

namespace fusor {

void require_input(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) fail(ctx.node, std::string("missing required input ") + what);
}

void require_int_dtype(const InferContext& ctx, size_t i, const char* what) {
  const DType t = ctx.inputs[i].dtype;
  if (t != DType::Int64 && t != DType::Int32)
    fail(ctx.node, std::string(what) + " must be int64 or int32, got " + dtype_name(t));
}

}  // namespace fusor
