// Shape functions of the elementwise and broadcast family: the elementwise table's unary ops
// (one rule for all), the broadcasting binary ops and comparisons, the math rows
// (ir/op_rows_math.h: variadic, integer, bitwise and logical ops), Where, Not, Cast, CastLike,
// Identity, Dropout, Expand and BatchNormalization (inference).
#include <string>

#include "ir/elementwise.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

// Which element types an operand accepts.
enum class Kinds { Float, Signed, Numeric, Integer, Unsigned, Any, Bool };

bool accepts(Kinds k, DType t) {
  switch (k) {
    case Kinds::Float: return t == DType::Float32 || t == DType::Float64;
    case Kinds::Signed:
      return accepts(Kinds::Float, t) || t == DType::Int64 || t == DType::Int32 || t == DType::Int16 || t == DType::Int8;
    case Kinds::Numeric: return accepts(Kinds::Signed, t) || accepts(Kinds::Unsigned, t);
    case Kinds::Integer: return accepts(Kinds::Numeric, t) && !accepts(Kinds::Float, t);
    case Kinds::Unsigned:
      return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
    case Kinds::Any: return t != DType::Undefined;
    case Kinds::Bool: return t == DType::Bool;
  }
  return false;
}

const char* kinds_name(Kinds k) {
  switch (k) {
    case Kinds::Float: return "float32 or float64";
    case Kinds::Signed: return "a float or signed integer type";
    case Kinds::Numeric: return "a numeric type";
    case Kinds::Integer: return "an integer type";
    case Kinds::Unsigned: return "an unsigned integer type";
    case Kinds::Any: return "a tensor type";
    case Kinds::Bool: return "bool";
  }
  return "?";
}

void require_inputs(const InferContext& ctx, size_t n) {
  if (ctx.inputs.size() < n)
    fail(ctx.node, "expects " + std::to_string(n) + " input(s), got " + std::to_string(ctx.inputs.size()));
  for (size_t i = 0; i < n; ++i)
    if (!ctx.has_input(i)) fail(ctx.node, "input " + std::to_string(i) + " is missing");
}

void require_kind(const InferContext& ctx, size_t i, Kinds k) {
  DType t = ctx.inputs[i].dtype;
  if (!accepts(k, t))
    fail(ctx.node, std::string("unsupported dtype ") + dtype_name(t) + " for input " +
                       std::to_string(i) + " (expects " + kinds_name(k) + ")");
}

void require_same_dtype(const InferContext& ctx, size_t i, size_t j) {
  if (ctx.inputs[i].dtype != ctx.inputs[j].dtype)
    fail(ctx.node, std::string("input ") + std::to_string(j) + " has dtype " + dtype_name(ctx.inputs[j].dtype) +
                       ", expected " + dtype_name(ctx.inputs[i].dtype) + " like input " + std::to_string(i));
}

std::vector<TensorType> unary(const InferContext& ctx, Kinds k) {
  require_inputs(ctx, 1);
  require_kind(ctx, 0, k);
  return same_as_input(ctx);
}

// Two operands of one dtype, broadcast; the result has `out` dtype or the operands' dtype.
std::vector<TensorType> binary(const InferContext& ctx, Kinds k, DType out = DType::Undefined) {
  require_inputs(ctx, 2);
  require_kind(ctx, 0, k);
  require_same_dtype(ctx, 0, 1);
  Dims dims = broadcast_dims(ctx.inputs[0].dims, ctx.inputs[1].dims, ctx.node);
  return {{out == DType::Undefined ? ctx.inputs[0].dtype : out, std::move(dims)}};
}

// Clip's bounds are attributes before opset 11, scalar inputs of the input's dtype after.
std::vector<TensorType> clip(const InferContext& ctx) {
  if (ctx.node.opset < 11) return unary(ctx, Kinds::Float);
  auto out = unary(ctx, Kinds::Numeric);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    require_same_dtype(ctx, 0, i);
    if (numel_of(ctx.inputs[i].dims) != 1)
      fail(ctx.node, std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
                         dims_to_string(ctx.inputs[i].dims));
  }
  return out;
}

// An op of the elementwise table: valid attributes (unary_params throws otherwise) and an input
// of the row's element types.
std::vector<TensorType> table_unary(const InferContext& ctx, Kinds k) {
  if (ctx.node.op == Op::Clip) return clip(ctx);
  unary_params(ctx.node, ctx.inputs, ctx.constants);
  return unary(ctx, k);
}

// One or more operands of one dtype, broadcast together (before opset 8 they had one shape,
// which broadcasting accepts too).
std::vector<TensorType> variadic(const InferContext& ctx, Kinds k) {
  if (ctx.inputs.empty()) fail(ctx.node, "expects at least 1 input, got 0");
  std::vector<Dims> shapes;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.has_input(i)) fail(ctx.node, "input " + std::to_string(i) + " is missing");
    require_kind(ctx, i, k);
    require_same_dtype(ctx, 0, i);
    shapes.push_back(ctx.inputs[i].dims);
  }
  return {{ctx.inputs[0].dtype, broadcast_all(shapes, ctx.node)}};
}

// X and a slope that broadcasts to X's shape (unidirectionally): the result has X's shape.
std::vector<TensorType> prelu(const InferContext& ctx) {
  auto out = binary(ctx, ctx.node.opset >= 9 ? Kinds::Numeric : Kinds::Float);
  if (out[0].dims != ctx.inputs[0].dims)
    fail(ctx.node, "slope shape " + dims_to_string(ctx.inputs[1].dims) + " does not broadcast to X's shape " +
                       dims_to_string(ctx.inputs[0].dims));
  return out;
}

// A float input, a bool result of its shape (IsNaN, IsInf).
std::vector<TensorType> float_test(const InferContext& ctx) {
  require_inputs(ctx, 1);
  require_kind(ctx, 0, Kinds::Float);
  return {{DType::Bool, ctx.inputs[0].dims}};
}

}  // namespace

namespace shape {

std::vector<TensorType> Min(const InferContext& ctx) {
  return variadic(ctx, ctx.node.opset >= 12 ? Kinds::Numeric : Kinds::Float);
}
std::vector<TensorType> Max(const InferContext& ctx) {
  return variadic(ctx, ctx.node.opset >= 12 ? Kinds::Numeric : Kinds::Float);
}
std::vector<TensorType> Mean(const InferContext& ctx) { return variadic(ctx, Kinds::Float); }
std::vector<TensorType> Sum(const InferContext& ctx) { return variadic(ctx, Kinds::Float); }

// fmod=1 is C's fmod (the dividend's sign); fmod=0 is Python's % (the divisor's sign), which the
// spec defines for integers only.
std::vector<TensorType> Mod(const InferContext& ctx) {
  auto out = binary(ctx, Kinds::Numeric);
  const int64_t fmod = ctx.node.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) fail(ctx.node, "fmod must be 0 or 1, got " + std::to_string(fmod));
  if (fmod == 0 && accepts(Kinds::Float, ctx.inputs[0].dtype))
    fail(ctx.node, std::string("fmod=0 is for integers; ") + dtype_name(ctx.inputs[0].dtype) + " operands need fmod=1");
  return out;
}

std::vector<TensorType> BitShift(const InferContext& ctx) {
  const std::string direction = ctx.node.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    fail(ctx.node, "direction must be 'LEFT' or 'RIGHT', got '" + direction + "'");
  return binary(ctx, Kinds::Unsigned);
}

std::vector<TensorType> And(const InferContext& ctx) { return binary(ctx, Kinds::Bool); }
std::vector<TensorType> Or(const InferContext& ctx) { return binary(ctx, Kinds::Bool); }
std::vector<TensorType> Xor(const InferContext& ctx) { return binary(ctx, Kinds::Bool); }
std::vector<TensorType> BitwiseAnd(const InferContext& ctx) { return binary(ctx, Kinds::Integer); }
std::vector<TensorType> BitwiseOr(const InferContext& ctx) { return binary(ctx, Kinds::Integer); }
std::vector<TensorType> BitwiseXor(const InferContext& ctx) { return binary(ctx, Kinds::Integer); }
std::vector<TensorType> BitwiseNot(const InferContext& ctx) { return unary(ctx, Kinds::Integer); }
std::vector<TensorType> GreaterOrEqual(const InferContext& ctx) { return binary(ctx, Kinds::Numeric, DType::Bool); }
std::vector<TensorType> LessOrEqual(const InferContext& ctx) { return binary(ctx, Kinds::Numeric, DType::Bool); }
std::vector<TensorType> PRelu(const InferContext& ctx) { return prelu(ctx); }
std::vector<TensorType> IsNaN(const InferContext& ctx) { return float_test(ctx); }
std::vector<TensorType> IsInf(const InferContext& ctx) { return float_test(ctx); }

// Input 0 cast to input 1's dtype.
std::vector<TensorType> CastLike(const InferContext& ctx) {
  require_inputs(ctx, 2);
  require_kind(ctx, 0, Kinds::Any);
  require_kind(ctx, 1, Kinds::Any);
  return {{ctx.inputs[1].dtype, ctx.inputs[0].dims}};
}

std::vector<TensorType> Add(const InferContext& ctx) { return binary(ctx, Kinds::Numeric); }
std::vector<TensorType> Sub(const InferContext& ctx) { return binary(ctx, Kinds::Numeric); }
std::vector<TensorType> Mul(const InferContext& ctx) { return binary(ctx, Kinds::Numeric); }
std::vector<TensorType> Div(const InferContext& ctx) { return binary(ctx, Kinds::Numeric); }

std::vector<TensorType> Pow(const InferContext& ctx) {
  require_inputs(ctx, 2);
  require_kind(ctx, 0, Kinds::Numeric);
  require_kind(ctx, 1, Kinds::Numeric);
  return {{ctx.inputs[0].dtype, broadcast_dims(ctx.inputs[0].dims, ctx.inputs[1].dims, ctx.node)}};
}

std::vector<TensorType> Equal(const InferContext& ctx) { return binary(ctx, Kinds::Any, DType::Bool); }
std::vector<TensorType> Greater(const InferContext& ctx) { return binary(ctx, Kinds::Numeric, DType::Bool); }
std::vector<TensorType> Less(const InferContext& ctx) { return binary(ctx, Kinds::Numeric, DType::Bool); }

std::vector<TensorType> Where(const InferContext& ctx) {
  require_inputs(ctx, 3);
  require_kind(ctx, 0, Kinds::Bool);
  require_kind(ctx, 1, Kinds::Any);
  require_same_dtype(ctx, 1, 2);
  Dims dims = broadcast_all({ctx.inputs[0].dims, ctx.inputs[1].dims, ctx.inputs[2].dims}, ctx.node);
  return {{ctx.inputs[1].dtype, std::move(dims)}};
}

std::vector<TensorType> Not(const InferContext& ctx) { return unary(ctx, Kinds::Bool); }
std::vector<TensorType> Identity(const InferContext& ctx) { return unary(ctx, Kinds::Any); }

// The elementwise table's ops: one input of the row's element types, valid attributes.
#define FUSOR_UNARY_SHAPE_FN_(name, types, ...) \
  std::vector<TensorType> name(const InferContext& ctx) { return table_unary(ctx, Kinds::types); }
FUSOR_UNARY_OPS(FUSOR_UNARY_SHAPE_FN_)
#undef FUSOR_UNARY_SHAPE_FN_

std::vector<TensorType> Cast(const InferContext& ctx) {
  require_inputs(ctx, 1);
  require_kind(ctx, 0, Kinds::Any);
  if (!ctx.node.has_attr("to")) fail(ctx.node, "missing attribute 'to'");
  DType t = ctx.node.attr_dtype("to", DType::Undefined);  // the importer rejects the types fusor lacks
  if (t == DType::Undefined) fail(ctx.node, "attribute 'to' names no dtype");
  return {{t, ctx.inputs[0].dims}};
}

std::vector<TensorType> Dropout(const InferContext& ctx) {
  require_inputs(ctx, 1);
  require_kind(ctx, 0, Kinds::Float);
  if (ctx.node.opset >= 12 && ctx.has_input(2)) {
    require_kind(ctx, 2, Kinds::Bool);
    const Tensor* training = ctx.constant(2);
    const Tensor* ratio = ctx.constant(1);
    bool ratio_zero = !ctx.has_input(1) || (ratio && ratio->scalar_as_double() == 0.0);
    if (training && training->scalar_as_double() != 0.0 && !ratio_zero)
      fail(ctx.node, "training_mode=true is not supported (inference only)");
  }
  std::vector<TensorType> out = same_as_input(ctx);
  // The mask has the input's dtype before opset 10, bool after.
  DType mask = ctx.node.opset < 10 ? ctx.inputs[0].dtype : DType::Bool;
  if (ctx.node.outputs.size() > 1) out.push_back({mask, ctx.inputs[0].dims});
  return out;
}

std::vector<TensorType> Expand(const InferContext& ctx) {
  require_inputs(ctx, 2);
  require_kind(ctx, 0, Kinds::Any);
  std::vector<int64_t> shape = constant_ints(ctx, 1, "Expand shape");
  for (int64_t d : shape)
    if (d < 0) fail(ctx.node, "shape " + dims_to_string(shape) + " has a negative dimension");
  return {{ctx.inputs[0].dtype, broadcast_dims(ctx.inputs[0].dims, shape, ctx.node)}};
}

std::vector<TensorType> BatchNormalization(const InferContext& ctx) {
  require_inputs(ctx, 5);
  require_kind(ctx, 0, Kinds::Float);
  if (ctx.node.attr_int("training_mode", 0) != 0)
    fail(ctx.node, "training_mode=1 is not supported (inference only)");
  const Dims& x = ctx.inputs[0].dims;
  if (x.size() < 2) fail(ctx.node, "input must have rank >= 2, got " + dims_to_string(x));
  int64_t c = x[1];
  int64_t per_sample = numel_of(x) / (x[0] == 0 ? 1 : x[0]);
  for (size_t i = 1; i < 5; ++i) {
    require_kind(ctx, i, Kinds::Float);
    int64_t n = numel_of(ctx.inputs[i].dims);
    if (n != c && n != per_sample)
      fail(ctx.node, "input " + std::to_string(i) + " has shape " + dims_to_string(ctx.inputs[i].dims) +
                         ", expected [" + std::to_string(c) + "] for input shape " + dims_to_string(x));
  }
  // Optional statistics outputs (training only in ONNX) echo the running mean and variance.
  std::vector<TensorType> out = same_as_input(ctx);
  for (size_t o = 1; o < ctx.node.outputs.size(); ++o)
    out.push_back(ctx.inputs[o % 2 == 1 ? 3 : 4]);
  return out;
}

}  // namespace shape
}  // namespace fusor
