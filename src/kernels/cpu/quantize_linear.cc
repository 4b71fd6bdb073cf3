// Per-tensor QuantizeLinear (float32 -> u8/s8) and DequantizeLinear (u8/s8 -> float32): the
// activations of a QDQ model, between every pair of layers; and DynamicQuantizeLinear, which
// quantizes a dynamically quantized model's activations before every MatMulInteger. The same
// float32 operations as the reference kernels (ref/quantize.cc) in the same order, vectorized, so
// the results are equal: x / scale rounded half to even (the default rounding mode), plus the
// zero point, clamped, NaN to 0; and (x - zero point) * scale. Per-axis and blocked parameters,
// other types and saturate=0 float8 run the reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/quantize_simd.h"

namespace fusor::cpu {
namespace {

template <class Q>
void quantize(const float* x, Q* y, int64_t n, float scale, float zero_point) {
  constexpr float lo = std::is_signed_v<Q> ? -128.f : 0.f, hi = std::is_signed_v<Q> ? 127.f : 255.f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(x[i] / scale) + zero_point;
    y[i] = static_cast<Q>(v != v ? 0.f : std::clamp(v, lo, hi));
  }
}

// DynamicQuantizeLinear's range, [min(x, 0), max(x, 0)], over [b, e). A NaN never wins a
// comparison (std::min(lo, NaN) keeps lo, as vminps(NaN, lo) does), so the fold's order does not
// matter and chunks and lanes may fold apart: the result is the reference's.
void fold_range(const float* x, int64_t b, int64_t e, float& lo, float& hi) {
  namespace hn = simd::hn;
  const simd::D d;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  simd::V vlo = hn::Zero(d), vhi = hn::Zero(d);
  int64_t i = b;
  for (; i + L <= e; i += L) {
    const simd::V v = hn::LoadU(d, x + i);
    vlo = hn::Min(v, vlo);  // vminps(v, lo): lo where v is NaN
    vhi = hn::Max(v, vhi);
  }
  alignas(64) float lanes_lo[hn::MaxLanes(d)], lanes_hi[hn::MaxLanes(d)];
  hn::Store(vlo, d, lanes_lo);
  hn::Store(vhi, d, lanes_hi);
  for (int64_t k = 0; k < L; ++k) {
    lo = std::min(lo, lanes_lo[k]);
    hi = std::max(hi, lanes_hi[k]);
  }
  for (; i < e; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
}

// round_half_even(x / scale) + zero point, clamped to [0, 255], NaN to 0: quantize<uint8_t>'s
// float32 operations, vectorized.
void quantize_u8(const float* x, uint8_t* y, int64_t n, float scale, float zero_point) {
  namespace hn = simd::hn;
  const simd::D d;
  const hn::Rebind<int32_t, simd::D> di;
  const hn::Rebind<uint8_t, simd::D> du8;
  const auto L = static_cast<int64_t>(hn::Lanes(d));
  const simd::V vs = hn::Set(d, scale), vz = hn::Set(d, zero_point), lo = hn::Zero(d), hi = hn::Set(d, 255.f);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const simd::V q = simd::quantize(hn::LoadU(d, x + i), vs, vz, lo, hi);
    hn::StoreU(hn::DemoteTo(du8, hn::ConvertTo(di, q)), du8, y + i);
  }
  quantize(x + i, y + i, n - i, scale, zero_point);
}

template <class Q>
void dequantize(const Q* x, float* y, int64_t n, float scale, float zero_point) {
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zero_point) * scale;
}

class QuantizeLinearKernel final : public Kernel {
 public:
  QuantizeLinearKernel(bool quantize, bool is_signed, std::string name)
      : quantize_(quantize), signed_(is_signed), name_(std::move(name)) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float scale = in[1].data<float>()[0];
    const float zp = in.size() > 2 && in[2].defined() ? static_cast<float>(in[2].scalar_as_double(0)) : 0.f;
    const int64_t n = in[0].numel();
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) {
      if (quantize_ && signed_) quantize(in[0].data<float>() + b, out[0].data<int8_t>() + b, e - b, scale, zp);
      else if (quantize_) quantize_u8(in[0].data<float>() + b, out[0].data<uint8_t>() + b, e - b, scale, zp);
      else if (signed_) dequantize(in[0].data<int8_t>() + b, out[0].data<float>() + b, e - b, scale, zp);
      else dequantize(in[0].data<uint8_t>() + b, out[0].data<float>() + b, e - b, scale, zp);
    });
  }
  std::string name() const override { return name_; }

 private:
  bool quantize_, signed_;
  std::string name_;
};

class DynamicQuantizeLinearKernel final : public Kernel {
 public:
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    const int64_t n = in[0].numel();
    // As the reference: the range always holds 0, std::min/max skip NaN the same way.
    float lo = 0, hi = 0;
    std::mutex merge;
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) {
      float chunk_lo = 0, chunk_hi = 0;
      fold_range(x, b, e, chunk_lo, chunk_hi);
      std::lock_guard<std::mutex> lock(merge);
      lo = std::min(lo, chunk_lo);
      hi = std::max(hi, chunk_hi);
    });
    const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    // An infinite range makes lo / scale NaN, which no uint8 holds: the zero point is then 0, as
    // every element quantizes to (x / inf is 0 or NaN).
    float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
    if (std::isnan(zp)) zp = 0;
    uint8_t* y = out[0].data<uint8_t>();
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) { quantize_u8(x + b, y + b, e - b, scale, zp); });
    out[1].data<float>()[0] = scale;
    out[2].data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  }
  std::string name() const override { return std::string("dynamic_quantize_linear_f32_u8_") + kIsa; }
};

bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }

}  // namespace

std::unique_ptr<Kernel> make_quantize_linear_kernel(const KernelRequest& r) {
  const Op op = r.node.op;
  if ((op != Op::QuantizeLinear && op != Op::DequantizeLinear) || used_outputs(r) != 1) return nullptr;
  // One scale (float32) and at most one zero point: per-tensor, whatever `axis` says.
  if (!input_is(r, 1, DType::Float32) || numel_of(r.inputs[1].dims) != 1) return nullptr;
  if (has_input(r, 2) && numel_of(r.inputs[2].dims) != 1) return nullptr;
  const bool quantize = op == Op::QuantizeLinear;
  const DType q = quantize ? r.outputs[0].dtype : r.inputs[0].dtype;
  const DType f = quantize ? r.inputs[0].dtype : r.outputs[0].dtype;
  if (!is_8bit(q) || f != DType::Float32 || (has_input(r, 2) && r.inputs[2].dtype != q)) return nullptr;
  const std::string type = q == DType::Int8 ? "s8" : "u8";
  return std::make_unique<QuantizeLinearKernel>(
      quantize, q == DType::Int8,
      quantize ? "quantize_linear_f32_" + type + "_" + kIsa : "dequantize_linear_" + type + "_f32_" + kIsa);
}

std::unique_ptr<Kernel> make_dynamic_quantize_linear_kernel(const KernelRequest& r) {
  if (r.node.op != Op::DynamicQuantizeLinear || !input_is(r, 0, DType::Float32) || r.node.outputs.size() != 3) return nullptr;
  for (int v : r.node.outputs)
    if (v < 0) return nullptr;  // writes all three
  return std::make_unique<DynamicQuantizeLinearKernel>();
}

}  // namespace fusor::cpu
