// Shape functions of the index family: ArgMax, ArgMin, TopK, CumSum, OneHot and Size.
#include <algorithm>
#include <sstream>

#include "ir/data_dependent.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

void require_input(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) fail(ctx.node, std::string("expects input ") + what);
}

// Numeric dtypes with a C++ element type (the reference kernels have no float16/bfloat16 path).
bool is_number(DType t) {
  return t != DType::Bool && t != DType::Float16 && t != DType::BFloat16 && t != DType::Undefined;
}

std::vector<TensorType> arg_reduce(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const TensorType& in = ctx.inputs[0];
  if (!is_number(in.dtype)) fail(ctx.node, std::string("unsupported dtype ") + dtype_name(in.dtype));
  int64_t rank = static_cast<int64_t>(in.dims.size());
  if (rank == 0) fail(ctx.node, "data must have rank >= 1");
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node);
  Dims out = in.dims;
  Dims rest = out;
  rest.erase(rest.begin() + axis);
  if (out[static_cast<size_t>(axis)] == 0 && numel_of(rest) > 0)
    fail(ctx.node, "axis " + std::to_string(axis) + " is empty: there is no extreme to index");
  if (ctx.node.attr_int("keepdims", 1) != 0)
    out[static_cast<size_t>(axis)] = 1;
  else
    out.erase(out.begin() + axis);
  return {{DType::Int64, out}};
}

}  // namespace

std::vector<TensorType> shape::ArgMax(const InferContext& ctx) { return arg_reduce(ctx); }
std::vector<TensorType> shape::ArgMin(const InferContext& ctx) { return arg_reduce(ctx); }

// TopK: k is an attribute before opset 10, a one-element int64 input from 10.
std::vector<TensorType> shape::TopK(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  const TensorType& in = ctx.inputs[0];
  if (!is_number(in.dtype)) fail(ctx.node, std::string("unsupported dtype ") + dtype_name(in.dtype));
  int64_t rank = static_cast<int64_t>(in.dims.size());
  if (rank == 0) fail(ctx.node, "X must have rank >= 1");
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node);
  int64_t k = 0;
  if (ctx.node.opset < 10) {
    k = ctx.node.attr_int("k", -1);
  } else {
    require_input(ctx, 1, "K");
    std::vector<int64_t> ks = constant_ints(ctx, 1, "K");
    if (ks.size() != 1) fail(ctx.node, "K must hold one value, got " + std::to_string(ks.size()));
    k = ks[0];
  }
  int64_t dim = in.dims[static_cast<size_t>(axis)];
  if (k < 0 || k > dim)
    fail(ctx.node, "k " + std::to_string(k) + " is out of range [0, " + std::to_string(dim) + "] for axis " +
                       std::to_string(axis));
  Dims out = in.dims;
  out[static_cast<size_t>(axis)] = k;
  return {{in.dtype, out}, {DType::Int64, out}};
}

std::vector<TensorType> shape::CumSum(const InferContext& ctx) {
  require_input(ctx, 0, "x");
  require_input(ctx, 1, "axis");
  const TensorType& in = ctx.inputs[0];
  if (!is_number(in.dtype)) fail(ctx.node, std::string("unsupported dtype ") + dtype_name(in.dtype));
  if (in.dims.empty()) fail(ctx.node, "x must have rank >= 1");
  const TensorType& axis = ctx.inputs[1];
  if (axis.dtype != DType::Int32 && axis.dtype != DType::Int64)
    fail(ctx.node, std::string("axis must be int32 or int64, got ") + dtype_name(axis.dtype));
  if (numel_of(axis.dims) != 1 || axis.dims.size() > 1) fail(ctx.node, "axis must be a scalar");
  if (ctx.constant(1))
    normalize_axis(ctx.constant(1)->to_int64_vector()[0], static_cast<int64_t>(in.dims.size()), ctx.node);
  return same_as_input(ctx);
}

// OneHot: the output inserts a dim of size depth at `axis`; depth must be known at plan time.
std::vector<TensorType> shape::OneHot(const InferContext& ctx) {
  require_input(ctx, 0, "indices");
  require_input(ctx, 1, "depth");
  require_input(ctx, 2, "values");
  if (!is_number(ctx.inputs[0].dtype))
    fail(ctx.node, std::string("unsupported indices dtype ") + dtype_name(ctx.inputs[0].dtype));
  if (numel_of(ctx.inputs[1].dims) != 1) fail(ctx.node, "depth must hold one value");
  if (numel_of(ctx.inputs[2].dims) != 2 || ctx.inputs[2].dims.size() != 1)
    fail(ctx.node, "values must be a 1-D tensor of two elements [off, on]");
  const Tensor* depth_t = &known_value(ctx, 1, "OneHot depth");  // else the model is planned per run
  double d = 0;
  try {
    d = depth_t->scalar_as_double(0);
  } catch (const Error&) {
    fail(ctx.node, std::string("unsupported depth dtype ") + dtype_name(depth_t->dtype()));
  }
  std::ostringstream shown;
  shown << d;
  if (!(d >= 1)) fail(ctx.node, "depth must be >= 1, got " + shown.str());
  Dims out = ctx.inputs[0].dims;
  if (d * static_cast<double>(std::max<int64_t>(numel_of(out), 1)) > 1e15)
    fail(ctx.node, "depth " + shown.str() + " makes the output too large");
  int64_t depth = static_cast<int64_t>(d);
  int64_t rank = static_cast<int64_t>(out.size()) + 1;
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node);
  out.insert(out.begin() + axis, depth);
  return {{ctx.inputs[2].dtype, out}};
}

std::vector<TensorType> shape::Size(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  return {{DType::Int64, {}}};
}

}  // namespace fusor
