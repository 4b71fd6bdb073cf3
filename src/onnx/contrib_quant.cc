// ONNX Runtime's quantized contrib ops (docs/ContribOperators.md) in QDQ form: each quantized
// input is dequantized, the float op computes, and QuantizeLinear writes the quantized output.
// That is the op's spec, and the form fusor's int8 fusion turns back into an integer kernel.
#include "onnx/contrib_quant.h"

#include <onnx/onnx_pb.h>

namespace fusor::contrib {
namespace {

using Ints = std::vector<int64_t>;

// DequantizeLinear of input `x` with the scale and optional zero point that follow it.
std::string dequantize(NodeBuilder& b, size_t x) {
  b.require_inputs({x, x + 1});
  std::vector<std::string> inputs{b.in(x), b.in(x + 1)};
  if (b.has_in(x + 2)) inputs.push_back(b.in(x + 2));
  return b.add("DequantizeLinear", inputs);
}

// QuantizeLinear of `y` into output 0 with the scale at input `scale` and the zero point after
// it. Without a zero point the output keeps the element type of `like` (the op's T), zero 0.
void quantize(NodeBuilder& b, const std::string& y, size_t scale, const std::string& like) {
  b.require_inputs({scale});
  auto zero_point = b.has_in(scale + 1) ? b.in(scale + 1) : b.add("CastLike", {b.scalar(0.0f), like});
  b.add("QuantizeLinear", {y, b.in(scale), zero_point}, {}, b.out(0));
}

// (A, A_scale, A_zp?, B, B_scale, B_zp?, C_scale, C_zp?) -> Q(DQ(A) op DQ(B)).
void qlinear_binary(NodeBuilder& b, const char* op) {
  b.expect_inputs(7, 8);
  auto y = b.add(op, {dequantize(b, 0), dequantize(b, 3)});
  quantize(b, y, 6, b.in(0));
}

// (X, X_scale, X_zp?, Y_scale, Y_zp?) -> Q(op(DQ(X))).
void qlinear_unary(NodeBuilder& b, const char* op, std::vector<onnx::AttributeProto> attrs = {}) {
  b.expect_inputs(4, 5);
  quantize(b, b.add(op, {dequantize(b, 0)}, std::move(attrs)), 3, b.in(0));
}

// Permutations between channels-last [N, spatial..., C] and channels-first [N, C, spatial...].
Ints to_channels_first(size_t rank) {
  Ints perm{0, static_cast<int64_t>(rank) - 1};
  for (int64_t a = 1; a + 1 < static_cast<int64_t>(rank); ++a) perm.push_back(a);
  return perm;
}

Ints to_channels_last(size_t rank) {
  Ints perm{0};
  for (int64_t a = 2; a < static_cast<int64_t>(rank); ++a) perm.push_back(a);
  perm.push_back(1);
  return perm;
}

// A channels-first pool `op` on X, transposed around when the node is channels_last.
void qlinear_pool(NodeBuilder& b, const char* op, std::vector<onnx::AttributeProto> attrs, std::optional<size_t> rank) {
  b.expect_inputs(4, 5);
  const int64_t channels_last = b.attr_int("channels_last", 0);
  if (channels_last != 0 && channels_last != 1) b.invalid("channels_last must be 0 or 1");
  auto x = dequantize(b, 0);
  if (channels_last) {
    if (!rank) b.unsupported("channels_last needs the input's rank, which is not known at import");
    if (*rank < 3) b.invalid("channels_last on an input of rank " + std::to_string(*rank));
    x = b.add("Transpose", {x}, {NodeBuilder::attr("perm", to_channels_first(*rank))});
  }
  auto y = b.add(op, {x}, std::move(attrs));
  if (channels_last) y = b.add("Transpose", {y}, {NodeBuilder::attr("perm", to_channels_last(*rank))});
  quantize(b, y, 3, b.in(0));
}

// A_scale * B_scale times the int32 product `product` (as float), plus the optional bias.
void rescale(NodeBuilder& b, const std::string& product, const std::string& a_scale, const std::string& b_scale,
             size_t bias) {
  auto scale = b.add("Mul", {a_scale, b_scale});
  auto y = b.add("Mul", {b.cast(product, onnx::TensorProto::FLOAT), scale}, {}, b.has_in(bias) ? "" : b.out(0));
  if (b.has_in(bias)) b.add("Add", {y, b.in(bias)}, {}, b.out(0));
}

}  // namespace

void qlinear_add(ContribExpander&, NodeBuilder& b) { qlinear_binary(b, "Add"); }

void qlinear_mul(ContribExpander&, NodeBuilder& b) { qlinear_binary(b, "Mul"); }

void qlinear_sigmoid(ContribExpander&, NodeBuilder& b) { qlinear_unary(b, "Sigmoid"); }

void qlinear_leaky_relu(ContribExpander&, NodeBuilder& b) {
  qlinear_unary(b, "LeakyRelu", {NodeBuilder::attr("alpha", b.attr_float("alpha", 0.01f))});
}

void qlinear_global_average_pool(ContribExpander& ex, NodeBuilder& b) {
  auto shape = ex.shape_of(b.in(0));
  qlinear_pool(b, "GlobalAveragePool", {}, shape ? std::optional<size_t>(shape->size()) : std::nullopt);
}

void qlinear_average_pool(ContribExpander&, NodeBuilder& b) {
  const size_t spatial = b.attr_ints("kernel_shape").size();
  if (spatial == 0) b.invalid("attribute 'kernel_shape' is required");
  qlinear_pool(b, "AveragePool",
               b.attrs_named({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}),
               spatial + 2);
}

// (Y_scale, Y_zp, then (X, X_scale, X_zp) per input) -> Q(Concat(DQ(X)...)).
void qlinear_concat(ContribExpander&, NodeBuilder& b) {
  const size_t n = b.input_count();
  if (n < 5 || (n - 2) % 3 != 0)
    b.invalid("takes Y_scale, Y_zero_point and a (X, X_scale, X_zero_point) triple per input, got " +
              std::to_string(n) + " inputs");
  b.require_inputs({0, 1});
  std::vector<std::string> parts;
  for (size_t x = 2; x < n; x += 3) parts.push_back(dequantize(b, x));
  auto y = b.add("Concat", parts, {NodeBuilder::attr("axis", b.attr_int("axis", 0))});
  b.add("QuantizeLinear", {y, b.in(0), b.in(1)}, {}, b.out(0));
}

// (X, X_scale, X_zp, Y_scale, Y_zp) -> Q(Softmax(DQ(X))). Attribute `opset` is the opset of the
// Softmax it replaced: before 13, Softmax normalized over every axis from `axis` on (X seen as 2-D).
void qlinear_softmax(ContribExpander&, NodeBuilder& b) {
  b.expect_inputs(4, 5);
  const int64_t axis = b.attr_int("axis", -1), opset = b.attr_int("opset", 0);
  if (opset <= 0) b.invalid("attribute 'opset' (the replaced Softmax's) is required");
  auto x = dequantize(b, 0);
  std::string y;
  if (opset >= 13) {
    y = b.add("Softmax", {x}, {NodeBuilder::attr("axis", axis)});
  } else {
    auto flat = b.add("Flatten", {x}, {NodeBuilder::attr("axis", axis)});
    y = b.add("Reshape", {b.add("Softmax", {flat}, {NodeBuilder::attr("axis", int64_t{1})}), b.add("Shape", {x})});
  }
  quantize(b, y, 3, b.in(0));
}

// (A, a_scale, a_zp, B, b_scale, b_zp, C?, y_scale?, y_zp?) -> alpha * (DQ(A)' DQ(B)' + C * a_scale
// * b_scale), quantized with y_scale when given, else float. C is int32 in the product's scale (per
// column of B where b_scale is), and alpha scales it too (as ONNX Runtime computes it).
void qgemm(ContribExpander&, NodeBuilder& b) {
  b.expect_inputs(6, 9);
  b.require_inputs({0, 1, 3, 4});
  const int64_t trans_a = b.attr_int("transA", 0), trans_b = b.attr_int("transB", 0);
  const float alpha = b.attr_float("alpha", 1.f);
  // B's per-column scale runs along its N axis: 1 as stored, 0 when transposed.
  std::vector<std::string> b_inputs{b.in(3), b.in(4)};
  if (b.has_in(5)) b_inputs.push_back(b.in(5));
  auto b_float = b.add("DequantizeLinear", b_inputs, {NodeBuilder::attr("axis", trans_b ? int64_t{0} : int64_t{1})});
  std::vector<std::string> gemm_inputs{dequantize(b, 0), b_float};
  if (b.has_in(6))
    gemm_inputs.push_back(b.add("Mul", {b.cast(b.in(6), onnx::TensorProto::FLOAT), b.add("Mul", {b.in(1), b.in(4)})}));
  // Y's type is y_zero_point's: without one Y is float, y_scale (if given) dividing it, as in ONNX
  // Runtime (it was quantized into A's type, against the float output the graph declares).
  const bool quantized = b.has_in(8), scaled = b.has_in(7);
  auto y = b.add("Gemm", gemm_inputs,
                 {NodeBuilder::attr("alpha", alpha), NodeBuilder::attr("beta", alpha), NodeBuilder::attr("transA", trans_a),
                  NodeBuilder::attr("transB", trans_b)},
                 quantized || scaled ? "" : b.out(0));
  if (quantized) quantize(b, y, 7, b.in(0));
  else if (scaled) b.add("Div", {y, b.in(7)}, {}, b.out(0));
}

// (A, B, a_scale, b_scale, a_zp?, b_zp?, bias?) -> MatMulInteger * (a_scale * b_scale) + bias.
void matmul_integer_to_float(ContribExpander&, NodeBuilder& b) {
  b.expect_inputs(4, 7);
  b.require_inputs({0, 1, 2, 3});
  auto product = b.add("MatMulInteger", {b.in(0), b.in(1), b.in(4), b.in(5)});
  rescale(b, product, b.in(2), b.in(3), 6);
}

// (A float, B, b_scale, b_zp?, bias?): A quantized by DynamicQuantizeLinear (uint8), then as
// MatMulIntegerToFloat with A's computed scale and zero point.
void dynamic_quantize_matmul(ContribExpander&, NodeBuilder& b) {
  b.expect_inputs(3, 5);
  b.require_inputs({0, 1, 2});
  auto a = b.add_outputs("DynamicQuantizeLinear", {b.in(0)}, 3);
  auto product = b.add("MatMulInteger", {a[0], b.in(1), a[2], b.in(3)});
  rescale(b, product, a[1], b.in(2), 4);
}

}  // namespace fusor::contrib
