// Shape functions of the data-dependent family: NonZero, Unique, Compress, NonMaxSuppression.
// Their output shapes depend on input values. Each computes the shape from those values when
// they are plan-time constants (the node then folds like any constant) and otherwise throws
// DataDependentShape (ir/data_dependent.h): the engine then plans the model per run.
#include <optional>

#include "ir/box_suppression.h"
#include "ir/data_dependent.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"
#include "ir/value_selection.h"

namespace fusor {
namespace {

void require_input(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) fail(ctx.node, std::string("expects input ") + what);
}

// The optional `axis` attribute of Unique and Compress, normalized for `in`. A scalar has no axis
// to slice along (normalize_axis takes 0 at rank 0, a scalar's one position), so it is refused.
std::optional<int64_t> optional_axis(const InferContext& ctx, const TensorType& in) {
  if (!ctx.node.has_attr("axis")) return std::nullopt;
  if (in.dims.empty()) fail(ctx.node, "axis needs an input of rank 1 or more");
  return normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(in.dims.size()), ctx.node);
}

}  // namespace

// NonZero: [rank, count] int64 indices; a scalar counts as a one-element vector (numpy).
std::vector<TensorType> shape::NonZero(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  const Tensor& x = known_value(ctx, 0, "X (its nonzero count sets the output shape)");
  const auto count = static_cast<int64_t>(nonzero_positions(x, ctx.node).size());
  return {{DType::Int64, {std::max<int64_t>(static_cast<int64_t>(x.rank()), 1), count}}};
}

// Unique: Y, indices, inverse_indices, counts; Y keeps X's shape but for the unique axis.
std::vector<TensorType> shape::Unique(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  const TensorType& in = ctx.inputs[0];
  const std::optional<int64_t> axis = optional_axis(ctx, in);
  const int64_t sorted = ctx.node.attr_int("sorted", 1);
  if (sorted != 0 && sorted != 1) fail(ctx.node, "sorted must be 0 or 1, got " + std::to_string(sorted));
  const Tensor& x = known_value(ctx, 0, "X (its distinct values set the output shape)");
  const UniqueGroups g = unique_groups(x, axis, sorted == 1, ctx.node);
  const auto unique = static_cast<int64_t>(g.first.size());
  Dims y = {unique};
  if (axis) {
    y = in.dims;
    y[static_cast<size_t>(*axis)] = unique;
  }
  return {{in.dtype, y},
          {DType::Int64, {unique}},
          {DType::Int64, {static_cast<int64_t>(g.inverse.size())}},
          {DType::Int64, {unique}}};
}

// Compress: the slices along `axis` (elements of the flattened input without one) that the
// bool condition keeps. Only the condition's values matter, so the data may be a run-time value.
std::vector<TensorType> shape::Compress(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  require_input(ctx, 1, "condition");
  const TensorType& in = ctx.inputs[0];
  const TensorType& cond = ctx.inputs[1];
  if (cond.dtype != DType::Bool || cond.dims.size() != 1) fail(ctx.node, "condition must be a 1-D bool tensor");
  const std::optional<int64_t> axis = optional_axis(ctx, in);
  const int64_t extent = axis ? in.dims[static_cast<size_t>(*axis)] : numel_of(in.dims);
  if (cond.dims[0] > extent)
    fail(ctx.node, "condition has " + std::to_string(cond.dims[0]) + " entries, more than the " +
                       std::to_string(extent) + (axis ? " of axis " + std::to_string(*axis) : " input elements"));
  const Tensor& c = known_value(ctx, 1, "condition (its true count sets the output shape)");
  const auto kept = static_cast<int64_t>(compress_positions(c, extent, ctx.node).size());
  Dims out = {kept};
  if (axis) {
    out = in.dims;
    out[static_cast<size_t>(*axis)] = kept;
  }
  return {{in.dtype, out}};
}

// NonMaxSuppression: [selected, 3] int64 (batch, class, box) triples.
std::vector<TensorType> shape::NonMaxSuppression(const InferContext& ctx) {
  require_input(ctx, 0, "boxes");
  require_input(ctx, 1, "scores");
  check_suppression_shapes(ctx.node, ctx.inputs[0], ctx.inputs[1]);
  suppression_params(ctx.node, {});  // a bad attribute fails now, not at the first run
  const char* what = "boxes, scores and thresholds (the selected count sets the output shape)";
  std::vector<const Tensor*> optional(3, nullptr);
  for (size_t i = 2; i < 5; ++i)
    if (ctx.has_input(i)) optional[i - 2] = &known_value(ctx, i, what);
  const SuppressionParams params = suppression_params(ctx.node, optional);
  const Tensor& boxes = known_value(ctx, 0, what);
  const Tensor& scores = known_value(ctx, 1, what);
  return {{DType::Int64, {static_cast<int64_t>(suppress_boxes(boxes, scores, params).size()), 3}}};
}

}  // namespace fusor
