// Shape functions of the data-movement family (ir/op_rows_movement.h): padding, tiling,
// resizing, block rearrangements, gathers and scatters by index tensors.
#include <algorithm>

#include "ir/data_dependent.h"
#include "ir/graph.h"
#include "ir/input_checks.h"
#include "ir/op_functions.h"
#include "ir/pad_params.h"
#include "ir/resize_params.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

void require_same_dtype(const InferContext& ctx, size_t i, size_t j, const char* what) {
  if (ctx.inputs[i].dtype != ctx.inputs[j].dtype)
    fail(ctx.node, std::string(what) + " must have the data's dtype " + dtype_name(ctx.inputs[i].dtype) +
                       ", got " + dtype_name(ctx.inputs[j].dtype));
}

// An optional input that is absent or an empty tensor counts as not given.
bool given(const InferContext& ctx, int i) {
  return i >= 0 && ctx.has_input(static_cast<size_t>(i)) && numel_of(ctx.inputs[static_cast<size_t>(i)].dims) != 0;
}

int64_t checked_mul(const Node& node, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(node, "output size overflows");
  return r;
}

// Index tensors of the element-wise gathers and scatters: same rank as the data, and no longer
// than the data on any axis but `axis`.
void check_elementwise_indices(const InferContext& ctx, size_t axis) {
  const Dims& data = ctx.inputs[0].dims;
  const Dims& idx = ctx.inputs[1].dims;
  if (idx.size() != data.size())
    fail(ctx.node, "indices " + dims_to_string(idx) + " must have the rank of data " + dims_to_string(data));
  for (size_t d = 0; d < idx.size(); ++d)
    if (d != axis && idx[d] > data[d])
      fail(ctx.node, "indices " + dims_to_string(idx) + " exceed data " + dims_to_string(data) + " on axis " +
                         std::to_string(d));
}

// DepthToSpace / SpaceToDepth: 4-D input and a positive blocksize.
int64_t blocksize_of(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  if (ctx.inputs[0].dims.size() != 4) fail(ctx.node, "input must be 4-D, got " + dims_to_string(ctx.inputs[0].dims));
  if (!ctx.node.has_attr("blocksize")) fail(ctx.node, "missing required attribute 'blocksize'");
  const int64_t b = ctx.node.attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20)) fail(ctx.node, "blocksize " + std::to_string(b) + " must be positive");
  return b;
}

// The reductions a scatter's `reduction` attribute may name at the node's opset.
void check_reduction(const Node& node) {
  const std::string r = node.attr_string("reduction", "none");
  const bool ok = r == "none" || ((r == "add" || r == "mul") && node.opset >= 16) ||
                  ((r == "max" || r == "min") && node.opset >= 18);
  if (!ok) fail(node, "unknown reduction '" + r + "' at opset " + std::to_string(node.opset));
}

std::vector<TensorType> scatter_elements_shape(const InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) require_input(ctx, i, "data/indices/updates");
  require_int_dtype(ctx, 1, "indices");
  require_same_dtype(ctx, 0, 2, "updates");
  if (ctx.inputs[0].dims.empty()) fail(ctx.node, "data must have rank >= 1");
  const auto axis = static_cast<size_t>(
      normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(ctx.inputs[0].dims.size()), ctx.node));
  check_elementwise_indices(ctx, axis);
  if (ctx.inputs[2].dims != ctx.inputs[1].dims)
    fail(ctx.node, "updates " + dims_to_string(ctx.inputs[2].dims) + " must have the shape of indices " +
                       dims_to_string(ctx.inputs[1].dims));
  check_reduction(ctx.node);
  return same_as_input(ctx, 0);
}

}  // namespace

std::vector<TensorType> shape::Pad(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const Node& n = ctx.node;
  std::vector<int64_t> pads, axes;
  if (n.opset < 11) {
    const char* key = n.opset < 2 ? "paddings" : "pads";
    if (!n.has_attr(key)) fail(n, std::string("missing required attribute '") + key + "'");
    pads = n.attr_ints(key);
  } else {
    require_input(ctx, 1, "pads");
    require_int_dtype(ctx, 1, "pads");
    pads = constant_ints(ctx, 1, "Pad's pads");
    if (ctx.has_input(2)) {
      require_same_dtype(ctx, 0, 2, "constant_value");
      if (numel_of(ctx.inputs[2].dims) > 1) fail(n, "constant_value must be a scalar");
    }
    if (n.opset >= 18 && ctx.has_input(3)) axes = constant_ints(ctx, 3, "Pad's axes");
  }
  return {{ctx.inputs[0].dtype, resolve_pad(n, ctx.inputs[0].dims, pads, axes).out_dims}};
}

std::vector<TensorType> shape::CenterCropPad(const InferContext& ctx) {
  require_input(ctx, 0, "input_data");
  require_input(ctx, 1, "shape");
  require_int_dtype(ctx, 1, "shape");
  const auto shape = constant_ints(ctx, 1, "CenterCropPad's shape");
  return {{ctx.inputs[0].dtype,
           resolve_center_crop_pad(ctx.node, ctx.inputs[0].dims, shape, ctx.node.attr_ints("axes")).out_dims}};
}

std::vector<TensorType> shape::Tile(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  if (ctx.node.opset < 6) fail(ctx.node, "Tile before opset 6 is not supported", ErrorKind::UnsupportedOp);
  require_input(ctx, 1, "repeats");
  require_int_dtype(ctx, 1, "repeats");
  const Dims& in = ctx.inputs[0].dims;
  const auto repeats = constant_ints(ctx, 1, "Tile's repeats");
  if (repeats.size() != in.size())
    fail(ctx.node, "repeats " + dims_to_string(repeats) + " must have one value per axis of " + dims_to_string(in));
  Dims out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] < 0) fail(ctx.node, "repeats " + dims_to_string(repeats) + " has a negative value");
    out[d] = checked_mul(ctx.node, in[d], repeats[d]);
  }
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::DepthToSpace(const InferContext& ctx) {
  const int64_t b = blocksize_of(ctx);
  const std::string mode = ctx.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") fail(ctx.node, "unknown mode '" + mode + "' (expects DCR or CRD)");
  const Dims& in = ctx.inputs[0].dims;
  if (in[1] % (b * b) != 0)
    fail(ctx.node, "channels " + std::to_string(in[1]) + " are not divisible by blocksize^2 = " + std::to_string(b * b));
  return {{ctx.inputs[0].dtype, {in[0], in[1] / (b * b), checked_mul(ctx.node, in[2], b), checked_mul(ctx.node, in[3], b)}}};
}

std::vector<TensorType> shape::SpaceToDepth(const InferContext& ctx) {
  const int64_t b = blocksize_of(ctx);
  const Dims& in = ctx.inputs[0].dims;
  if (in[2] % b != 0 || in[3] % b != 0)
    fail(ctx.node, "height and width of " + dims_to_string(in) + " are not divisible by blocksize " + std::to_string(b));
  return {{ctx.inputs[0].dtype, {in[0], checked_mul(ctx.node, in[1], b * b), in[2] / b, in[3] / b}}};
}

std::vector<TensorType> shape::GatherElements(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  require_input(ctx, 1, "indices");
  require_int_dtype(ctx, 1, "indices");
  if (ctx.inputs[0].dims.empty()) fail(ctx.node, "data must have rank >= 1");
  const auto axis = static_cast<size_t>(
      normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(ctx.inputs[0].dims.size()), ctx.node));
  check_elementwise_indices(ctx, axis);
  return {{ctx.inputs[0].dtype, ctx.inputs[1].dims}};
}

std::vector<TensorType> shape::GatherND(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  require_input(ctx, 1, "indices");
  require_int_dtype(ctx, 1, "indices");
  const Dims& data = ctx.inputs[0].dims;
  const Dims& idx = ctx.inputs[1].dims;
  const int64_t b = ctx.node.attr_int("batch_dims", 0);
  const auto r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
  if (r < 1 || q < 1) fail(ctx.node, "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) fail(ctx.node, "batch_dims " + std::to_string(b) + " must be below both ranks");
  for (int64_t d = 0; d < b; ++d)
    if (data[static_cast<size_t>(d)] != idx[static_cast<size_t>(d)])
      fail(ctx.node, "batch dims of data " + dims_to_string(data) + " and indices " + dims_to_string(idx) + " differ");
  const int64_t k = idx.back();
  if (k < 1 || k > r - b)
    fail(ctx.node, "indices' last dim " + std::to_string(k) + " must be in [1, " + std::to_string(r - b) + "]");
  Dims out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::ScatterElements(const InferContext& ctx) { return scatter_elements_shape(ctx); }
std::vector<TensorType> shape::Scatter(const InferContext& ctx) { return scatter_elements_shape(ctx); }

std::vector<TensorType> shape::ScatterND(const InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) require_input(ctx, i, "data/indices/updates");
  require_int_dtype(ctx, 1, "indices");
  require_same_dtype(ctx, 0, 2, "updates");
  const Dims& data = ctx.inputs[0].dims;
  const Dims& idx = ctx.inputs[1].dims;
  if (data.empty() || idx.empty()) fail(ctx.node, "data and indices must have rank >= 1");
  const int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(data.size()))
    fail(ctx.node, "indices' last dim " + std::to_string(k) + " must be in [1, " + std::to_string(data.size()) + "]");
  Dims want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (ctx.inputs[2].dims != want)
    fail(ctx.node, "updates " + dims_to_string(ctx.inputs[2].dims) + " must have shape " + dims_to_string(want));
  check_reduction(ctx.node);
  return same_as_input(ctx, 0);
}

std::vector<TensorType> shape::ReverseSequence(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  require_input(ctx, 1, "sequence_lens");
  require_int_dtype(ctx, 1, "sequence_lens");
  const Dims& in = ctx.inputs[0].dims;
  if (in.size() < 2) fail(ctx.node, "input must have rank >= 2, got " + dims_to_string(in));
  const int64_t batch_axis = ctx.node.attr_int("batch_axis", 1), time_axis = ctx.node.attr_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    fail(ctx.node, "batch_axis and time_axis must be 0 and 1 in some order");
  if (ctx.inputs[1].dims != Dims{in[static_cast<size_t>(batch_axis)]})
    fail(ctx.node, "sequence_lens " + dims_to_string(ctx.inputs[1].dims) + " must have one length per batch (" +
                       std::to_string(in[static_cast<size_t>(batch_axis)]) + ")");
  return same_as_input(ctx, 0);
}

std::vector<TensorType> shape::EyeLike(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  if (ctx.inputs[0].dims.size() != 2) fail(ctx.node, "input must be 2-D, got " + dims_to_string(ctx.inputs[0].dims));
  const DType t = ctx.node.attr_dtype("dtype", ctx.inputs[0].dtype);
  if (ctx.node.has_attr("dtype") && !std::holds_alternative<DType>(ctx.node.attrs.at("dtype")))
    fail(ctx.node, "attribute 'dtype' must name an element type");
  return {{t, ctx.inputs[0].dims}};
}

std::vector<TensorType> shape::Resize(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  const Node& n = ctx.node;
  const ResizeInputs where = resize_inputs(n);
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (where.scales < 0) {
    for (float s : n.attr_floats("scales")) scales.push_back(s);
  } else if (given(ctx, where.scales)) {
    const auto i = static_cast<size_t>(where.scales);
    const Tensor* t = &known_value(ctx, i, "Resize scales");  // else the model is planned per run
    if (t->dtype() != DType::Float32 && t->dtype() != DType::Float64)
      fail(n, std::string("scales must be float, got ") + dtype_name(t->dtype()));
    for (int64_t k = 0; k < t->numel(); ++k) scales.push_back(t->scalar_as_double(k));
  }
  if (given(ctx, where.sizes)) {
    require_int_dtype(ctx, static_cast<size_t>(where.sizes), "sizes");
    sizes = constant_ints(ctx, static_cast<size_t>(where.sizes), "Resize's sizes");
  }
  return {{ctx.inputs[0].dtype, resolve_resize(n, ctx.inputs[0].dims, scales, sizes).out_dims}};
}

std::vector<TensorType> shape::Upsample(const InferContext& ctx) { return shape::Resize(ctx); }

}  // namespace fusor
