// Reference kernels of ConvInteger and QLinearConv: x and w minus their zero points (padding
// then stands for the real value 0, as ONNX's reference pads after subtracting) go through the
// Conv reference kernel in float64, exact for these integer sums, then narrow to int32 or
// requantize per output channel.
#include "kernels/ref/integer_ops.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

const Tensor* optional_input(std::span<const Tensor> in, size_t i) {
  return i < in.size() && in[i].defined() ? &in[i] : nullptr;
}

Tensor integer_conv(const Node& n, const Tensor& x, const Tensor* x_zp, const Tensor& w, const Tensor* w_zp,
                    const Tensor* bias, const Dims& out_dims) {
  std::vector<Tensor> ops = {minus_zero_point(x, x_zp, DType::Float64), minus_channel_zero_point(w, w_zp)};
  if (bias) ops.push_back(minus_zero_point(*bias, nullptr, DType::Float64));
  Tensor acc[1] = {Tensor(DType::Float64, out_dims)};
  Conv(n, ops, acc);
  return acc[0];
}

}  // namespace

void ConvInteger(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  Tensor acc = integer_conv(n, in[0], optional_input(in, 2), in[1], optional_input(in, 3), nullptr, out[0].dims());
  int32_t* y = out[0].data<int32_t>();
  const double* a = acc.data<double>();
  for (int64_t i = 0; i < acc.numel(); ++i) y[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(a[i])));
}

void QLinearConv(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  // x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
  Tensor acc = integer_conv(n, in[0], optional_input(in, 2), in[3], optional_input(in, 5), optional_input(in, 8),
                            out[0].dims());
  int64_t inner = 1;
  for (size_t d = 2; d < acc.dims().size(); ++d) inner *= acc.dims()[d];
  requantize(n, acc, in[1], in[4], in[6], optional_input(in, 7), inner, false, out[0]);
}

}  // namespace fusor::ref
