// Reference kernels of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, computed
// the way ONNX's reference does: x / scale in the scale's precision (float32 stays float32),
// rounded half to even, plus the zero point, clamped to the output type's range (float8
// targets round and saturate per ir/float8.h, following the `saturate` attribute; float4e2m1
// ones per ir/mx_formats.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/float8.h"
#include "ir/mx_formats.h"
#include "ir/quant_layout.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/quant_values.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

const Tensor* optional_input(std::span<const Tensor> in, size_t i) {
  return i < in.size() && in[i].defined() ? &in[i] : nullptr;
}

// What QuantizeLinear and DequantizeLinear share: which scale and zero point each element of
// x uses, and the zero points as doubles (one 0 when none is given).
struct LinearParams {
  QuantLayout layout;
  bool has_zp = false;
  std::vector<double> zps;
  double zero_point(int64_t p) const { return zps[has_zp ? static_cast<size_t>(p) : 0]; }
};

LinearParams linear_params(const Node& n, std::span<const Tensor> in) {
  const Tensor* zp = optional_input(in, 2);
  return LinearParams{quant_layout(n, in[0].dims(), in[1].dims(), zp ? &zp->dims() : nullptr), zp != nullptr,
                      zp ? values_as_double(*zp) : std::vector<double>(1, 0.0)};
}

// x / scale as float32 when both are float32 (numpy's float32 division), else as double.
template <class S>
double divide(double x, S scale, bool x_is_float32) {
  if constexpr (std::is_same_v<S, float>) {
    if (x_is_float32) return static_cast<double>(static_cast<float>(x) / scale);
  }
  return x / static_cast<double>(scale);
}

}  // namespace

void QuantizeLinear(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const Tensor& x = in[0];
  const Tensor& scale = in[1];
  Tensor& y = out[0];
  const LinearParams q = linear_params(n, in);
  const bool saturate = n.opset < 19 || n.attr_int("saturate", 1) != 0;
  const bool x_is_float32 = x.dtype() == DType::Float32;
  const DType t = y.dtype();
  const auto range = quant_range(t);  // not a structured binding: clang 14 cannot capture those
  const double lo = range.first, hi = range.second;
  const Float8Format f8 = float8_format(t);
  visit_float(scale.dtype(), n, [&](auto* tag) {
    using S = elem_t<decltype(tag)>;
    const S* s = scale.data<S>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t p = q.layout.param_index(i);
      const double r = divide(x.scalar_as_double(i), s[p], x_is_float32);
      const double z = q.zero_point(p);
      if (is_float8(t)) {
        // A zero point of 0 is skipped so that -0 stays -0.
        static_cast<uint8_t*>(y.raw())[i] = float_to_float8(static_cast<float>(z != 0 ? r + z : r), f8, saturate);
      } else if (t == DType::Float4E2M1) {
        static_cast<uint8_t*>(y.raw())[i] = float_to_float4e2m1(static_cast<float>(z != 0 ? r + z : r));
      } else {
        const double v = std::nearbyint(r) + z;
        store_integer(y, i, std::isnan(v) ? 0 : std::clamp(v, lo, hi));
      }
    }
  });
}

void DequantizeLinear(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const Tensor& x = in[0];
  const Tensor& scale = in[1];
  Tensor& y = out[0];
  const LinearParams q = linear_params(n, in);
  if (q.has_zp && is_float8(x.dtype()) && std::any_of(q.zps.begin(), q.zps.end(), [](double z) { return z != 0; }))
    fail(n, "a float8 x_zero_point must be zero");
  visit_float(scale.dtype(), n, [&](auto* tag) {
    using S = elem_t<decltype(tag)>;
    const S* s = scale.data<S>();
    S* py = y.data<S>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t p = q.layout.param_index(i);
      // (x - zero point) in float32, as ONNX's reference does, then times the scale.
      const float dx = static_cast<float>(x.scalar_as_double(i)) - static_cast<float>(q.zero_point(p));
      py[i] = static_cast<S>(dx * s[p]);
    }
  });
}

void DynamicQuantizeLinear(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const Tensor& x = in[0];
  const float* px = x.data<float>();
  // The range always holds 0, so that 0 quantizes exactly; all arithmetic in float32.
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  // An infinite range makes lo / scale NaN, which no uint8 holds: the zero point is then 0, as
  // every element quantizes to (x / inf is 0 or NaN).
  float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  if (std::isnan(zp)) zp = 0;
  uint8_t* py = out[0].data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = std::nearbyint(px[i] / scale) + zp;
    py[i] = std::isnan(v) ? 0 : static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
  }
  out[1].data<float>()[0] = scale;
  out[2].data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace fusor::ref
