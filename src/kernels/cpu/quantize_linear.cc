// Per-tensor QuantizeLinear (float32 -> u8/s8) and DequantizeLinear (u8/s8 -> float32): the
// activations of a QDQ model, between every pair of layers; and DynamicQuantizeLinear, which
// quantizes a dynamically quantized model's activations before every MatMulInteger. The same float32 operations as the
// reference kernels (ref/quantize.cc) in the same order, as loops the compiler vectorizes, so
// the results are equal: x / scale rounded half to even (the default rounding mode), plus the
// zero point, clamped, NaN to 0; and (x - zero point) * scale. Per-axis and blocked parameters,
// other types and saturate=0 float8 run the reference.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

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
      else if (quantize_) quantize(in[0].data<float>() + b, out[0].data<uint8_t>() + b, e - b, scale, zp);
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
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    const float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
    uint8_t* y = out[0].data<uint8_t>();
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) { quantize(x + b, y + b, e - b, scale, zp); });
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
