// Reference kernels of MatMulInteger and QLinearMatMul: the operands minus their zero points
// in int64 go through the MatMul reference kernel (exact), then narrow to int32 or requantize.
#include "kernels/ref/integer_ops.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

const Tensor* optional_input(std::span<const Tensor> in, size_t i) {
  return i < in.size() && in[i].defined() ? &in[i] : nullptr;
}

Tensor integer_product(const Node& n, const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp,
                       const Dims& out_dims) {
  Tensor ops[2] = {minus_zero_point(a, a_zp, DType::Int64, a.rank() >= 2),
                   minus_zero_point(b, b_zp, DType::Int64)};
  Tensor acc[1] = {Tensor(DType::Int64, out_dims)};
  MatMul(n, ops, acc);
  return acc[0];
}

}  // namespace

void MatMulInteger(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  Tensor acc = integer_product(n, in[0], optional_input(in, 2), in[1], optional_input(in, 3), out[0].dims());
  int32_t* y = out[0].data<int32_t>();
  // int32 accumulation as ONNX specifies: wraps like the int32 arithmetic it describes.
  for (int64_t i = 0; i < acc.numel(); ++i) y[i] = static_cast<int32_t>(static_cast<uint32_t>(acc.data<int64_t>()[i]));
}

void QLinearMatMul(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  // a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
  Tensor acc = integer_product(n, in[0], optional_input(in, 2), in[3], optional_input(in, 5), out[0].dims());
  // Saturated, as the spec's formula and ONNX Runtime: onnx.reference wraps (its int8 node tests
  // were made with it, tests/conformance/expected_failures.txt), and a wrapped 400 read 144.
  requantize(n, acc, in[1], in[4], in[6], optional_input(in, 7), 1, false, out[0]);
}

}  // namespace fusor::ref
