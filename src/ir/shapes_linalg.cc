// Shape functions of the linear-algebra ops of the sequence family: Einsum and Det.
#include "ir/einsum_equation.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor::shape {

std::vector<TensorType> Einsum(const InferContext& ctx) {
  if (ctx.inputs.empty()) fail(ctx.node, "expects at least 1 input", ErrorKind::InvalidModel);
  if (!ctx.node.has_attr("equation")) fail(ctx.node, "missing attribute 'equation'", ErrorKind::InvalidModel);
  DType t = ctx.inputs[0].dtype;
  if (t != DType::Float32 && t != DType::Float64 && t != DType::Int32 && t != DType::Int64)
    fail(ctx.node, std::string("unsupported dtype ") + dtype_name(t));
  std::vector<Dims> dims;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i].dtype != t)
      fail(ctx.node, "inputs must share one dtype, got " + std::string(dtype_name(t)) + " and " +
                         dtype_name(ctx.inputs[i].dtype), ErrorKind::InvalidModel);
    dims.push_back(ctx.inputs[i].dims);
  }
  return {{t, einsum_axes(ctx.node, ctx.node.attr_string("equation", ""), dims).output_dims()}};
}

std::vector<TensorType> Det(const InferContext& ctx) {
  if (!ctx.has_input(0)) fail(ctx.node, "expects 1 input", ErrorKind::InvalidModel);
  const TensorType& x = ctx.inputs[0];
  if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
    fail(ctx.node, std::string("input must be float32 or float64, got ") + dtype_name(x.dtype));
  size_t r = x.dims.size();
  if (r < 2 || x.dims[r - 1] != x.dims[r - 2])
    fail(ctx.node, "input must be square matrices [..., M, M], got " + dims_to_string(x.dims));
  return {{x.dtype, Dims(x.dims.begin(), x.dims.end() - 2)}};
}

}  // namespace fusor::shape
