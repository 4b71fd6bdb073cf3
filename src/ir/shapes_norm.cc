// Shape functions of the normalizations over channel groups and windows: GroupNormalization,
// InstanceNormalization, LpNormalization, MeanVarianceNormalization and LRN. Each returns its
// input's type after checking the parameters the kernels index with.
#include <string>

#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

void require_float_input(const InferContext& ctx, size_t min_rank) {
  if (!ctx.has_input(0)) fail(ctx.node, "expects input X");
  DType t = ctx.inputs[0].dtype;
  if (t != DType::Float32 && t != DType::Float64)
    fail(ctx.node, std::string("X must be float32 or float64, got ") + dtype_name(t));
  if (ctx.inputs[0].dims.size() < min_rank)
    fail(ctx.node, "X must have rank >= " + std::to_string(min_rank) + ", got " + dims_to_string(ctx.inputs[0].dims));
}

// Input i must be a vector of `n` values of X's dtype.
void require_vector(const InferContext& ctx, size_t i, const char* what, int64_t n) {
  if (!ctx.has_input(i)) fail(ctx.node, std::string("expects input ") + what);
  if (ctx.inputs[i].dtype != ctx.inputs[0].dtype || ctx.inputs[i].dims != Dims{n})
    fail(ctx.node, std::string(what) + " must be a " + dtype_name(ctx.inputs[0].dtype) + " vector of " +
                       std::to_string(n) + ", got " + dtype_name(ctx.inputs[i].dtype) + " " +
                       dims_to_string(ctx.inputs[i].dims));
}

}  // namespace

std::vector<TensorType> shape::GroupNormalization(const InferContext& ctx) {
  require_float_input(ctx, 2);
  const int64_t channels = ctx.inputs[0].dims[1];
  if (!ctx.node.has_attr("num_groups")) fail(ctx.node, "attribute num_groups is required");
  const int64_t groups = ctx.node.attr_int("num_groups", 1);
  if (groups < 1 || channels % groups != 0)
    fail(ctx.node, "num_groups " + std::to_string(groups) + " does not divide " + std::to_string(channels) +
                       " channels");
  // Opset 18 scales and shifts per group; opset 21 per channel.
  const int64_t params = ctx.node.opset >= 21 ? channels : groups;
  require_vector(ctx, 1, "scale", params);
  require_vector(ctx, 2, "bias", params);
  return same_as_input(ctx);
}

std::vector<TensorType> shape::InstanceNormalization(const InferContext& ctx) {
  require_float_input(ctx, 3);
  require_vector(ctx, 1, "scale", ctx.inputs[0].dims[1]);
  require_vector(ctx, 2, "B", ctx.inputs[0].dims[1]);
  return same_as_input(ctx);
}

std::vector<TensorType> shape::LpNormalization(const InferContext& ctx) {
  require_float_input(ctx, 1);
  normalize_axis(ctx.node.attr_int("axis", -1), static_cast<int64_t>(ctx.inputs[0].dims.size()), ctx.node);
  const int64_t p = ctx.node.attr_int("p", 2);
  if (p != 1 && p != 2) fail(ctx.node, "p must be 1 or 2, got " + std::to_string(p));
  return same_as_input(ctx);
}

std::vector<TensorType> shape::MeanVarianceNormalization(const InferContext& ctx) {
  if (ctx.node.opset < 9) fail(ctx.node, "opset " + std::to_string(ctx.node.opset) + " is not supported (from 9)");
  require_float_input(ctx, 1);
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].dims.size());
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : ctx.node.attr_ints("axes", {0, 2, 3})) {
    const int64_t axis = normalize_axis(a, rank, ctx.node);
    if (seen[static_cast<size_t>(axis)]) fail(ctx.node, "axes repeat axis " + std::to_string(axis));
    seen[static_cast<size_t>(axis)] = true;
  }
  return same_as_input(ctx);
}

std::vector<TensorType> shape::LRN(const InferContext& ctx) {
  require_float_input(ctx, 3);
  if (!ctx.node.has_attr("size")) fail(ctx.node, "attribute size is required");
  const int64_t size = ctx.node.attr_int("size", 1);
  if (size < 1) fail(ctx.node, "size must be positive, got " + std::to_string(size));
  return same_as_input(ctx);
}

}  // namespace fusor
