// Row normalizations (float32): LayerNormalization over its trailing axes (and the RMSNorm that
// fuse_layer_norm makes of the same kind), and InstanceNormalization over each (batch, channel)
// plane; one row kernel serves all.
#include <cmath>
#include <utility>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// Normalizes one row of n floats: two passes (mean, then the variance of x - mean) in vector
// accumulators, then y = (x - mean) * rstd * scale + bias, with a scale and bias per element
// (`g`, `bias`, either may be null) or, where null, the scalars `g0` and `b0`. Returns {mean, rstd}.
// `rms`: RMSNorm, the mean taken as 0 (rstd from the mean of squares).
std::pair<float, float> normalize_row(const float* xr, float* yr, int64_t n, float eps, const float* g,
                                      const float* bias, float g0, float b0, bool rms = false) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  // Everything is taken about the row's first value, x = origin + (x - origin): with a large
  // common offset (x = 1e4 + noise), a float sum of x loses the noise's bits, and a mean held in
  // one float is off by half its ulp (5e-4 at 1e4), which shifts every output by that.
  const float origin = rms || n == 0 ? 0.f : xr[0];
  const V vo = hn::Set(d, origin);
  V acc = hn::Zero(d);
  int64_t i = 0;
  float centre = 0.f;  // the mean - origin
  if (!rms) {
    for (; i + L <= n; i += L) acc = hn::Add(acc, hn::Sub(hn::LoadU(d, xr + i), vo));
    float sum = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < n; ++i) sum += xr[i] - origin;
    centre = sum / static_cast<float>(n);
  }
  const V vc = hn::Set(d, centre);
  auto centred = [&](V x) { return hn::Sub(hn::Sub(x, vo), vc); };
  acc = hn::Zero(d);
  for (i = 0; i + L <= n; i += L) {
    V c = centred(hn::LoadU(d, xr + i));
    acc = hn::MulAdd(c, c, acc);
  }
  float sq = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) sq += (xr[i] - origin - centre) * (xr[i] - origin - centre);
  const float rstd = 1.f / std::sqrt(sq / static_cast<float>(n) + eps);
  const V vr = hn::Set(d, rstd), vg0 = hn::Set(d, g0), vb0 = hn::Set(d, b0);
  for (i = 0; i + L <= n; i += L) {
    V c = hn::Mul(hn::Mul(centred(hn::LoadU(d, xr + i)), vr), g ? hn::LoadU(d, g + i) : vg0);
    hn::StoreU(hn::Add(c, bias ? hn::LoadU(d, bias + i) : vb0), d, yr + i);
  }
  for (; i < n; ++i) yr[i] = (xr[i] - origin - centre) * rstd * (g ? g[i] : g0) + (bias ? bias[i] : b0);
  const float mean = origin + centre;
  return {mean, rstd};
}

// LayerNormalization over the trailing axes [axis, rank); the optional Mean and InvStdDev
// outputs are written too.
class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(int64_t n, float eps, bool has_bias, bool rms) : n_(n), eps_(eps), has_bias_(has_bias), rms_(rms) {}

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    const float* g = in[1].data<float>();
    const float* bias = has_bias_ ? in[2].data<float>() : nullptr;
    float* y = out[0].data<float>();
    float* mean_out = out.size() > 1 && out[1].defined() ? out[1].data<float>() : nullptr;
    float* rstd_out = out.size() > 2 && out[2].defined() ? out[2].data<float>() : nullptr;
    const int64_t n = n_, rows = in[0].numel() / n;
    parallel_range(rows, rows * n * 3, 1, [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        auto [mean, rstd] = normalize_row(x + r * n, y + r * n, n, eps_, g, bias, 0.f, 0.f, rms_);
        if (mean_out) mean_out[r] = mean;
        if (rstd_out) rstd_out[r] = rstd;
      }
    });
  }
  std::string name() const override { return std::string(rms_ ? "rmsnorm_f32_" : "layernorm_f32_") + kIsa; }

 private:
  int64_t n_;
  float eps_;
  bool has_bias_, rms_;
};

// InstanceNormalization: each (n, c) plane of [N, C, spatial...] is a row, scaled and shifted by
// channel c's scale and bias.
class InstanceNormKernel final : public Kernel {
 public:
  InstanceNormKernel(int64_t channels, int64_t n, float eps) : channels_(channels), n_(n), eps_(eps) {}

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    const float* scale = in[1].data<float>();
    const float* bias = in[2].data<float>();
    float* y = out[0].data<float>();
    const int64_t n = n_, rows = in[0].numel() / n;
    parallel_range(rows, rows * n * 3, 1, [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const int64_t c = r % channels_;
        normalize_row(x + r * n, y + r * n, n, eps_, nullptr, nullptr, scale[c], bias[c]);
      }
    });
  }
  std::string name() const override { return std::string("instancenorm_f32_") + kIsa; }

 private:
  int64_t channels_, n_;
  float eps_;
};

}  // namespace

std::unique_ptr<Kernel> make_layer_norm_kernel(const KernelRequest& r) {
  const Node& node = r.node;
  if (node.op != Op::LayerNormalization || !input_is(r, 0, DType::Float32) || !input_is(r, 1, DType::Float32))
    return nullptr;
  const Dims& dims = r.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return nullptr;
  int64_t n = 1;
  for (int64_t i = axis; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
  if (n == 0 || numel_of(r.inputs[1].dims) != n) return nullptr;
  bool has_bias = has_input(r, 2);
  if (has_bias && (!input_is(r, 2, DType::Float32) || numel_of(r.inputs[2].dims) != n)) return nullptr;
  for (size_t o = 1; o < r.outputs.size(); ++o)
    if (o < r.node.outputs.size() && r.node.outputs[o] >= 0 && r.outputs[o].dtype != DType::Float32) return nullptr;
  // rms: only set by fuse_layer_norm on the RMSNorm it fuses (never by an imported node).
  return std::make_unique<LayerNormKernel>(n, node.attr_float("epsilon", 1e-5f), has_bias, node.attr_int("rms", 0) != 0);
}

std::unique_ptr<Kernel> make_instance_norm_kernel(const KernelRequest& r) {
  if (r.node.op != Op::InstanceNormalization || r.inputs.size() < 3) return nullptr;
  for (size_t i = 0; i < 3; ++i)
    if (!input_is(r, i, DType::Float32)) return nullptr;
  const Dims& dims = r.inputs[0].dims;
  if (dims.size() < 3) return nullptr;
  const int64_t channels = dims[1];
  int64_t n = 1;
  for (size_t i = 2; i < dims.size(); ++i) n *= dims[i];
  if (n == 0 || channels == 0 || numel_of(r.inputs[1].dims) != channels || numel_of(r.inputs[2].dims) != channels)
    return nullptr;
  return std::make_unique<InstanceNormKernel>(channels, n, r.node.attr_float("epsilon", 1e-5f));
}

}  // namespace fusor::cpu
