// Shape functions of Conv's relatives: ConvTranspose, DeformConv and Col2Im. They check every
// channel count, attribute length and size the kernels index with.
#include <string>

#include "ir/conv_transpose_geometry.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

DType float_input(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) fail(ctx.node, std::string("expects input ") + what);
  DType t = ctx.inputs[i].dtype;
  if (t != DType::Float32 && t != DType::Float64)
    fail(ctx.node, std::string(what) + " must be float32 or float64, got " + dtype_name(t));
  if (i > 0 && t != ctx.inputs[0].dtype)
    fail(ctx.node, std::string(what) + " is " + dtype_name(t) + " but X is " + dtype_name(ctx.inputs[0].dtype));
  return t;
}

// An optional input that must have exactly `dims` when present.
void optional_dims(const InferContext& ctx, size_t i, const char* what, const Dims& dims) {
  if (!ctx.has_input(i)) return;
  float_input(ctx, i, what);
  if (ctx.inputs[i].dims != dims)
    fail(ctx.node, std::string(what) + " must be " + dims_to_string(dims) + ", got " + dims_to_string(ctx.inputs[i].dims));
}

// W's spatial extent, which kernel_shape must repeat when given.
Dims kernel_of(const InferContext& ctx, const Dims& w) {
  Dims k(w.begin() + 2, w.end());
  auto attr = ctx.node.attr_ints("kernel_shape");
  if (!attr.empty() && Dims(attr.begin(), attr.end()) != k)
    fail(ctx.node, "kernel_shape " + dims_to_string(Dims(attr.begin(), attr.end())) + " does not match W " +
                       dims_to_string(w));
  return k;
}

}  // namespace

std::vector<TensorType> shape::ConvTranspose(const InferContext& ctx) {
  DType t = float_input(ctx, 0, "X");
  float_input(ctx, 1, "W");
  const Dims& x = ctx.inputs[0].dims;
  const Dims& w = ctx.inputs[1].dims;
  if (x.size() < 3 || x.size() > 5) fail(ctx.node, "X must be N, C and 1 to 3 spatial dims, got " + dims_to_string(x));
  if (w.size() != x.size()) fail(ctx.node, "W " + dims_to_string(w) + " and X " + dims_to_string(x) + " ranks differ");
  const int64_t group = ctx.node.attr_int("group", 1);
  // W is [C, M / group, kernel...].
  if (group < 1 || x[1] % group != 0 || w[0] != x[1])
    fail(ctx.node, "channels do not match: X " + dims_to_string(x) + ", W " + dims_to_string(w) + ", group " +
                       std::to_string(group));
  const int64_t c_out = w[1] * group;
  optional_dims(ctx, 2, "B", {c_out});
  Dims out = {x[0], c_out};
  for (const TransposedAxis& a : conv_transpose_axes(ctx.node, x, kernel_of(ctx, w))) out.push_back(a.out);
  return {{t, out}};
}

std::vector<TensorType> shape::DeformConv(const InferContext& ctx) {
  DType t = float_input(ctx, 0, "X");
  float_input(ctx, 1, "W");
  float_input(ctx, 2, "offset");
  const Dims& x = ctx.inputs[0].dims;
  const Dims& w = ctx.inputs[1].dims;
  if (x.size() != 4) fail(ctx.node, "only 2-D DeformConv is supported, X is " + dims_to_string(x));
  if (w.size() != 4) fail(ctx.node, "W must be [M, C / group, kH, kW], got " + dims_to_string(w));
  const int64_t group = ctx.node.attr_int("group", 1), offset_group = ctx.node.attr_int("offset_group", 1);
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1])
    fail(ctx.node, "channels do not match: X " + dims_to_string(x) + ", W " + dims_to_string(w) + ", group " +
                       std::to_string(group));
  if (offset_group < 1 || x[1] % offset_group != 0)
    fail(ctx.node, "offset_group " + std::to_string(offset_group) + " does not divide " + std::to_string(x[1]) +
                       " channels");
  const Dims k = kernel_of(ctx, w);
  auto strides = ints_sized(ctx.node, "strides", 2, 1), dil = ints_sized(ctx.node, "dilations", 2, 1);
  auto pads = ints_sized(ctx.node, "pads", 4, 0);
  Dims out = {x[0], w[0]};
  for (size_t d = 0; d < 2; ++d) {
    if (strides[d] < 1 || dil[d] < 1 || k[d] < 1) fail(ctx.node, "strides, dilations and kernel must be positive");
    const int64_t padded = x[d + 2] + pads[d] + pads[d + 2] - ((k[d] - 1) * dil[d] + 1);
    if (padded < 0) fail(ctx.node, "kernel window is larger than the padded input " + dims_to_string(x));
    out.push_back(padded / strides[d] + 1);
  }
  const int64_t taps = k[0] * k[1];
  optional_dims(ctx, 2, "offset", {x[0], offset_group * taps * 2, out[2], out[3]});
  optional_dims(ctx, 3, "B", {w[0]});
  optional_dims(ctx, 4, "mask", {x[0], offset_group * taps, out[2], out[3]});
  return {{t, out}};
}

std::vector<TensorType> shape::Col2Im(const InferContext& ctx) {
  DType t = float_input(ctx, 0, "input");
  const Dims& x = ctx.inputs[0].dims;
  if (x.size() != 3) fail(ctx.node, "input must be [N, C * prod(block_shape), L], got " + dims_to_string(x));
  const auto image = constant_ints(ctx, 1, "image_shape");
  const auto block = constant_ints(ctx, 2, "block_shape");
  const size_t ns = image.size();
  if (ns == 0 || block.size() != ns)
    fail(ctx.node, "image_shape and block_shape must have the same, non-zero length");
  auto strides = ints_sized(ctx.node, "strides", ns, 1), dil = ints_sized(ctx.node, "dilations", ns, 1);
  auto pads = ints_sized(ctx.node, "pads", 2 * ns, 0);
  int64_t taps = 1, blocks = 1;
  for (size_t d = 0; d < ns; ++d) {
    if (image[d] < 1 || block[d] < 1 || strides[d] < 1 || dil[d] < 1 || pads[d] < 0 || pads[d + ns] < 0)
      fail(ctx.node, "image_shape, block_shape, strides and dilations must be positive, pads not negative");
    const int64_t padded = image[d] + pads[d] + pads[d + ns] - (dil[d] * (block[d] - 1) + 1);
    if (padded < 0) fail(ctx.node, "block is larger than the padded image in dim " + std::to_string(d));
    taps *= block[d];
    blocks *= padded / strides[d] + 1;
  }
  if (x[1] % taps != 0)
    fail(ctx.node, "input dim 1 (" + std::to_string(x[1]) + ") is not a multiple of the block volume " +
                       std::to_string(taps));
  if (x[2] != blocks)
    fail(ctx.node, "input has " + std::to_string(x[2]) + " blocks, the image holds " + std::to_string(blocks));
  Dims out = {x[0], x[1] / taps};
  out.insert(out.end(), image.begin(), image.end());
  return {{t, out}};
}

}  // namespace fusor
