// Shape functions of the spatial-sampling ops: GridSample, AffineGrid and RoiAlign.
#include "ir/op_functions.h"
#include "ir/sampling_params.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

void require_float(const InferContext& ctx, size_t i, const char* what) {
  DType t = ctx.inputs[i].dtype;
  if (t != DType::Float32 && t != DType::Float64)
    fail(ctx.node, std::string(what) + " must be float32 or float64, got " + dtype_name(t));
}

}  // namespace

std::vector<TensorType> shape::GridSample(const InferContext& ctx) {
  const Node& node = ctx.node;
  if (!ctx.has_input(0) || !ctx.has_input(1)) fail(node, "expects inputs X and grid", ErrorKind::InvalidModel);
  grid_sample_params(node);
  require_float(ctx, 0, "X");
  require_float(ctx, 1, "grid");
  const Dims &x = ctx.inputs[0].dims, &grid = ctx.inputs[1].dims;
  if (x.size() < 3 || (node.opset < 20 && x.size() != 4))
    fail(node, "X must be [N, C, H, W]" + std::string(node.opset < 20 ? "" : " or have more spatial dims") + ", got " +
                   dims_to_string(x), ErrorKind::InvalidModel);
  const size_t spatial = x.size() - 2;
  for (size_t d = 2; d < x.size(); ++d)
    if (x[d] < 1) fail(node, "X must have positive spatial dims, got " + dims_to_string(x), ErrorKind::InvalidArgument);
  if (grid.size() != x.size() || grid[0] != x[0] || grid.back() != static_cast<int64_t>(spatial))
    fail(node, "grid must be [N, out spatial..., " + std::to_string(spatial) + "] for X " + dims_to_string(x) + ", got " +
                   dims_to_string(grid), ErrorKind::InvalidModel);
  Dims y = {x[0], x[1]};
  y.insert(y.end(), grid.begin() + 1, grid.end() - 1);
  return {{ctx.inputs[0].dtype, y}};
}

std::vector<TensorType> shape::AffineGrid(const InferContext& ctx) {
  const Node& node = ctx.node;
  if (!ctx.has_input(0) || !ctx.has_input(1)) fail(node, "expects inputs theta and size", ErrorKind::InvalidModel);
  require_float(ctx, 0, "theta");
  int64_t align = node.attr_int("align_corners", 0);
  if (align != 0 && align != 1) fail(node, "align_corners must be 0 or 1, got " + std::to_string(align), ErrorKind::InvalidModel);
  std::vector<int64_t> size = constant_ints(ctx, 1, "size");
  if (size.size() != 4 && size.size() != 5)
    fail(node, "size must be [N, C, H, W] or [N, C, D, H, W], got " + dims_to_string(size), ErrorKind::InvalidModel);
  const auto k = static_cast<int64_t>(size.size() - 2);
  for (int64_t d : size)
    if (d < 0) fail(node, "size " + dims_to_string(size) + " has a negative dim", ErrorKind::InvalidArgument);
  const Dims want_theta = {size[0], k, k + 1};
  if (ctx.inputs[0].dims != want_theta)
    fail(node, "theta must be " + dims_to_string(want_theta) + " for size " + dims_to_string(size) + ", got " +
                   dims_to_string(ctx.inputs[0].dims), ErrorKind::InvalidModel);
  Dims grid = {size[0]};
  grid.insert(grid.end(), size.begin() + 2, size.end());
  grid.push_back(k);
  return {{ctx.inputs[0].dtype, grid}};
}

std::vector<TensorType> shape::RoiAlign(const InferContext& ctx) {
  const Node& node = ctx.node;
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) fail(node, "expects inputs X, rois and batch_indices", ErrorKind::InvalidModel);
  RoiAlignParams p = roi_align_params(node);
  require_float(ctx, 0, "X");
  if (ctx.inputs[1].dtype != ctx.inputs[0].dtype) fail(node, "rois must have X's dtype", ErrorKind::InvalidModel);
  DType bt = ctx.inputs[2].dtype;
  if (bt != DType::Int64 && bt != DType::Int32)
    fail(node, std::string("batch_indices must be int64, got ") + dtype_name(bt), ErrorKind::InvalidModel);
  const Dims &x = ctx.inputs[0].dims, &rois = ctx.inputs[1].dims, &idx = ctx.inputs[2].dims;
  if (x.size() != 4 || x[2] < 1 || x[3] < 1)
    fail(node, "X must be [N, C, H, W] with H, W >= 1, got " + dims_to_string(x), ErrorKind::InvalidModel);
  if (rois.size() != 2 || rois[1] != 4 || idx.size() != 1 || idx[0] != rois[0])
    fail(node, "rois must be [R, 4] and batch_indices [R], got " + dims_to_string(rois) + " and " + dims_to_string(idx),
         ErrorKind::InvalidModel);
  return {{ctx.inputs[0].dtype, {rois[0], x[1], p.output_height, p.output_width}}};
}

}  // namespace fusor
