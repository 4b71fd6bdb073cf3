// Shape functions of the quantization family (ir/op_rows_quant.h): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, and the integer MatMul and Conv ops, whose output
// shapes are MatMul's and Conv's (computed by those shape functions on stand-in types).
#include "ir/float8.h"
#include "ir/op_functions.h"
#include "ir/quant_layout.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }
bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }

// The element types QuantizeLinear writes and DequantizeLinear reads (besides int32).
bool is_quantized(DType t) {
  return is_8bit(t) || t == DType::Int16 || t == DType::UInt16 || t == DType::Int4 || t == DType::UInt4 ||
         t == DType::Int2 || t == DType::UInt2 || t == DType::Float4E2M1 || is_float8(t);
}

void require_input(const InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) fail(ctx.node, std::string("expects input ") + what, ErrorKind::InvalidModel);
}

void require_scalar(const InferContext& ctx, size_t i, const char* what) {
  if (ctx.has_input(i) && numel_of(ctx.inputs[i].dims) != 1)
    fail(ctx.node, std::string(what) + " must hold one value, got shape " + dims_to_string(ctx.inputs[i].dims),
         ErrorKind::InvalidModel);
}

void require_8bit(const InferContext& ctx, size_t i, const char* what) {
  if (ctx.has_input(i) && !is_8bit(ctx.inputs[i].dtype))
    fail(ctx.node, std::string(what) + " must be int8 or uint8, got " + dtype_name(ctx.inputs[i].dtype));
}

void require_same_dtype(const InferContext& ctx, size_t i, size_t j, const char* what) {
  if (ctx.has_input(j) && ctx.inputs[j].dtype != ctx.inputs[i].dtype)
    fail(ctx.node, std::string(what) + " is " + dtype_name(ctx.inputs[j].dtype) + ", expected " +
                       dtype_name(ctx.inputs[i].dtype), ErrorKind::InvalidModel);
}

void require_float_scale(const InferContext& ctx, size_t i, const char* what, bool half_too = false) {
  require_input(ctx, i, what);
  const DType t = ctx.inputs[i].dtype;
  if (!is_float(t) && !(half_too && (t == DType::Float16 || t == DType::BFloat16)))
    fail(ctx.node, std::string(what) + " must be float32 or float64" + (half_too ? " (or float16, bfloat16)" : "") +
                       ", got " + dtype_name(t));
}

// A zero point that is scalar or a vector of `n` (per row or per column).
void require_scalar_or_vector(const InferContext& ctx, size_t i, int64_t n, const char* what) {
  if (!ctx.has_input(i)) return;
  const Dims& d = ctx.inputs[i].dims;
  if (numel_of(d) != 1 && !(d.size() == 1 && d[0] == n))
    fail(ctx.node, std::string(what) + " must be a scalar or a vector of " + std::to_string(n) + ", got " +
                       dims_to_string(d), ErrorKind::InvalidModel);
}

// MatMul's output dims for a and b (stand-in int64 types).
Dims matmul_dims(const InferContext& ctx, size_t a, size_t b) {
  TensorType types[2] = {{DType::Int64, ctx.inputs[a].dims}, {DType::Int64, ctx.inputs[b].dims}};
  return shape::MatMul(InferContext{ctx.node, types, {}, nullptr})[0].dims;
}

// Conv's output dims for x, w and an optional bias (stand-in float64 types).
Dims conv_dims(const InferContext& ctx, size_t x, size_t w, size_t bias) {
  std::vector<TensorType> types = {{DType::Float64, ctx.inputs[x].dims}, {DType::Float64, ctx.inputs[w].dims}};
  if (ctx.has_input(bias)) types.push_back({DType::Float64, ctx.inputs[bias].dims});
  return shape::Conv(InferContext{ctx.node, types, {}, nullptr})[0].dims;
}

// Per-output-channel (or scalar) parameters of the integer Conv ops: w's dim 0.
void require_per_channel(const InferContext& ctx, size_t i, size_t w, const char* what) {
  if (ctx.has_input(i) && !ctx.inputs[w].dims.empty())
    require_scalar_or_vector(ctx, i, ctx.inputs[w].dims[0], what);
}

}  // namespace

std::vector<TensorType> shape::QuantizeLinear(const InferContext& ctx) {
  require_input(ctx, 0, "x");
  require_float_scale(ctx, 1, "y_scale");
  const DType x = ctx.inputs[0].dtype;
  if (!is_float(x) && x != DType::Int32)
    fail(ctx.node, std::string("x must be float32, float64 or int32, got ") + dtype_name(x));
  if (is_float(x) && ctx.inputs[1].dtype != x)
    fail(ctx.node, std::string("y_scale is ") + dtype_name(ctx.inputs[1].dtype) + " but x is " + dtype_name(x),
         ErrorKind::InvalidModel);
  const DType attr = ctx.node.opset >= 21 ? ctx.node.attr_dtype("output_dtype", DType::Undefined) : DType::Undefined;
  DType out = attr == DType::Undefined ? DType::UInt8 : attr;
  if (ctx.has_input(2)) {
    out = ctx.inputs[2].dtype;
    if (attr != DType::Undefined && attr != out)
      fail(ctx.node, std::string("output_dtype ") + dtype_name(attr) + " differs from y_zero_point's " + dtype_name(out),
           ErrorKind::InvalidModel);
  }
  if (!is_quantized(out)) fail(ctx.node, std::string("cannot quantize to ") + dtype_name(out));
  quant_layout(ctx.node, ctx.inputs[0].dims, ctx.inputs[1].dims, ctx.has_input(2) ? &ctx.inputs[2].dims : nullptr);
  return {{out, ctx.inputs[0].dims}};
}

std::vector<TensorType> shape::DequantizeLinear(const InferContext& ctx) {
  require_input(ctx, 0, "x");
  require_float_scale(ctx, 1, "x_scale");
  const DType x = ctx.inputs[0].dtype;
  if (!is_quantized(x) && x != DType::Int32) fail(ctx.node, std::string("cannot dequantize ") + dtype_name(x));
  require_same_dtype(ctx, 0, 2, "x_zero_point");
  quant_layout(ctx.node, ctx.inputs[0].dims, ctx.inputs[1].dims, ctx.has_input(2) ? &ctx.inputs[2].dims : nullptr);
  return {{ctx.inputs[1].dtype, ctx.inputs[0].dims}};
}

std::vector<TensorType> shape::DynamicQuantizeLinear(const InferContext& ctx) {
  require_input(ctx, 0, "x");
  if (ctx.inputs[0].dtype != DType::Float32)
    fail(ctx.node, std::string("x must be float32, got ") + dtype_name(ctx.inputs[0].dtype));
  return {{DType::UInt8, ctx.inputs[0].dims}, {DType::Float32, {}}, {DType::UInt8, {}}};
}

std::vector<TensorType> shape::MatMulInteger(const InferContext& ctx) {
  require_input(ctx, 0, "A");
  require_input(ctx, 1, "B");
  require_8bit(ctx, 0, "A");
  require_8bit(ctx, 1, "B");
  require_same_dtype(ctx, 0, 2, "a_zero_point");
  require_same_dtype(ctx, 1, 3, "b_zero_point");
  Dims out = matmul_dims(ctx, 0, 1);
  const Dims& a = ctx.inputs[0].dims;
  const Dims& b = ctx.inputs[1].dims;
  // Per-row (A) and per-column (B) zero points; others must broadcast against their operand.
  if (ctx.has_input(2) && !(a.size() >= 2 && ctx.inputs[2].dims == Dims{a[a.size() - 2]}) &&
      broadcast_dims(ctx.inputs[2].dims, a, ctx.node) != a)
    fail(ctx.node, "a_zero_point " + dims_to_string(ctx.inputs[2].dims) + " does not fit A " + dims_to_string(a),
         ErrorKind::InvalidModel);
  if (ctx.has_input(3) && broadcast_dims(ctx.inputs[3].dims, b, ctx.node) != b)
    fail(ctx.node, "b_zero_point " + dims_to_string(ctx.inputs[3].dims) + " does not fit B " + dims_to_string(b),
         ErrorKind::InvalidModel);
  return {{DType::Int32, out}};
}

std::vector<TensorType> shape::QLinearMatMul(const InferContext& ctx) {
  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
  for (size_t i = 0; i < 8; ++i)
    if (i != 2 && i != 5 && i != 7) require_input(ctx, i, "a, a_scale, b, b_scale and y_scale");
  require_8bit(ctx, 0, "a");
  require_8bit(ctx, 3, "b");
  require_same_dtype(ctx, 0, 2, "a_zero_point");
  require_same_dtype(ctx, 3, 5, "b_zero_point");
  require_8bit(ctx, 7, "y_zero_point");
  // Its scales keep float16/bfloat16 (passes/storage_types.cc): the multiplier rounds as ONNX's does.
  for (size_t i : {1, 4, 6}) require_float_scale(ctx, i, "the scales", true);
  require_same_dtype(ctx, 1, 4, "b_scale");
  require_same_dtype(ctx, 1, 6, "y_scale");
  const Dims& b = ctx.inputs[3].dims;
  const int64_t n = b.size() >= 2 ? b.back() : 1;
  require_scalar(ctx, 1, "a_scale");
  require_scalar(ctx, 2, "a_zero_point");
  require_scalar_or_vector(ctx, 4, n, "b_scale");
  require_scalar_or_vector(ctx, 5, n, "b_zero_point");
  require_scalar(ctx, 6, "y_scale");
  require_scalar(ctx, 7, "y_zero_point");
  return {{ctx.has_input(7) ? ctx.inputs[7].dtype : ctx.inputs[0].dtype, matmul_dims(ctx, 0, 3)}};
}

std::vector<TensorType> shape::ConvInteger(const InferContext& ctx) {
  // x, w, x_zero_point, w_zero_point
  require_input(ctx, 0, "x");
  require_input(ctx, 1, "w");
  require_8bit(ctx, 0, "x");
  require_8bit(ctx, 1, "w");
  require_same_dtype(ctx, 0, 2, "x_zero_point");
  require_same_dtype(ctx, 1, 3, "w_zero_point");
  require_scalar(ctx, 2, "x_zero_point");
  Dims out = conv_dims(ctx, 0, 1, ctx.inputs.size());
  require_per_channel(ctx, 3, 1, "w_zero_point");
  return {{DType::Int32, out}};
}

std::vector<TensorType> shape::QLinearConv(const InferContext& ctx) {
  // x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
  for (size_t i : {0, 1, 3, 4, 6}) require_input(ctx, i, "x, x_scale, w, w_scale and y_scale");
  require_8bit(ctx, 0, "x");
  require_8bit(ctx, 3, "w");
  require_same_dtype(ctx, 0, 2, "x_zero_point");
  require_same_dtype(ctx, 3, 5, "w_zero_point");
  require_8bit(ctx, 7, "y_zero_point");
  for (size_t i : {1, 4, 6}) require_float_scale(ctx, i, "the scales");
  require_same_dtype(ctx, 1, 4, "w_scale");
  require_same_dtype(ctx, 1, 6, "y_scale");
  if (ctx.has_input(8) && ctx.inputs[8].dtype != DType::Int32)
    fail(ctx.node, std::string("B must be int32, got ") + dtype_name(ctx.inputs[8].dtype));
  require_scalar(ctx, 1, "x_scale");
  require_scalar(ctx, 2, "x_zero_point");
  require_scalar(ctx, 6, "y_scale");
  require_scalar(ctx, 7, "y_zero_point");
  Dims out = conv_dims(ctx, 0, 3, 8);
  require_per_channel(ctx, 4, 3, "w_scale");
  require_per_channel(ctx, 5, 3, "w_zero_point");
  return {{ctx.has_input(7) ? ctx.inputs[7].dtype : ctx.inputs[0].dtype, out}};
}

}  // namespace fusor
