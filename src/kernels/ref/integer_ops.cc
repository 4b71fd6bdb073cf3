#include "kernels/ref/integer_ops.h"

#include <algorithm>
#include <cmath>

#include "ir/half.h"
#include "ir/shape_util.h"
#include "kernels/ref/quant_values.h"

namespace fusor::ref {
namespace {

// Rounds a float to the scales' precision: numpy computes float16 arithmetic in float32 and
// rounds each result back to float16.
float round_to(DType t, float x) {
  if (t == DType::Float16) return half_to_float(float_to_half(x));
  if (t == DType::BFloat16) return bfloat16_to_float(float_to_bfloat16(x));
  return x;
}

}  // namespace

Tensor minus_zero_point(const Tensor& t, const Tensor* zp, DType to, bool zp_per_row) {
  Tensor out(to, t.dims());
  std::vector<double> z = zp ? values_as_double(*zp) : std::vector<double>{0.0};
  Dims zdims = zp ? zp->dims() : Dims{};
  if (zp_per_row && zdims.size() == 1) zdims.push_back(1);
  const std::vector<int64_t> zs = broadcast_strides(zdims, t.dims());
  const std::vector<int64_t> ts = strides_of(t.dims());
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = 0, rest = i;
    for (size_t d = 0; d < ts.size(); ++d) {
      off += rest / ts[d] * zs[d];
      rest %= ts[d];
    }
    const double v = t.scalar_as_double(i) - z[static_cast<size_t>(off)];
    if (to == DType::Int64) out.data<int64_t>()[i] = static_cast<int64_t>(v);
    else out.data<double>()[i] = v;
  }
  return out;
}

Tensor minus_channel_zero_point(const Tensor& t, const Tensor* zp) {
  Tensor out(DType::Float64, t.dims());
  std::vector<double> z = zp ? values_as_double(*zp) : std::vector<double>{0.0};
  const int64_t per_channel = t.rank() > 0 && t.dim(0) > 0 ? t.numel() / t.dim(0) : 1;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.data<double>()[i] = t.scalar_as_double(i) - z[z.size() == 1 ? 0 : static_cast<size_t>(i / per_channel)];
  return out;
}

std::vector<double> requantize_multipliers(const Tensor& a_scale, const Tensor& b_scale, const Tensor& y_scale) {
  const std::vector<double> sa = values_as_double(a_scale), sb = values_as_double(b_scale);
  const std::vector<double> sy = values_as_double(y_scale);
  const DType st = a_scale.dtype();
  std::vector<double> mult(sb.size());
  for (size_t c = 0; c < sb.size(); ++c) {
    if (st == DType::Float64) {
      mult[c] = sa[0] * sb[c] / sy[0];
    } else {
      const float ab = round_to(st, static_cast<float>(sa[0]) * static_cast<float>(sb[c]));
      mult[c] = round_to(st, ab / static_cast<float>(sy[0]));
    }
  }
  return mult;
}

void store_requantized(Tensor& y, int64_t i, double acc, double multiplier, double zero_point, bool wrap) {
  const auto [lo, hi] = quant_range(y.dtype());
  // Rounded, then shifted by the zero point, as the spec's saturate(round(x / y_scale) + zero_point)
  // and ONNX Runtime do: with an odd zero point, a tie rounded after the shift lands one step off.
  const double v = std::nearbyint(acc * multiplier) + zero_point;
  if (std::isnan(v)) store_integer(y, i, 0);
  else if (!wrap) store_integer(y, i, std::clamp(v, lo, hi));
  else {
    const auto low8 = static_cast<uint8_t>(static_cast<int64_t>(std::clamp(v, -1e18, 1e18)));
    store_integer(y, i, lo < 0 ? static_cast<double>(static_cast<int8_t>(low8)) : static_cast<double>(low8));
  }
}

void requantize(const Node& n, const Tensor& acc, const Tensor& a_scale, const Tensor& b_scale,
                const Tensor& y_scale, const Tensor* y_zero_point, int64_t inner, bool wrap, Tensor& y) {
  const std::vector<double> mult = requantize_multipliers(a_scale, b_scale, y_scale);
  const double zp = y_zero_point ? y_zero_point->scalar_as_double(0) : 0.0;
  const auto channels = static_cast<int64_t>(mult.size());
  for (int64_t i = 0; i < acc.numel(); ++i)
    store_requantized(y, i, acc.scalar_as_double(i), mult[channels == 1 ? 0 : static_cast<size_t>((i / inner) % channels)],
                      zp, wrap);
}

}  // namespace fusor::ref
