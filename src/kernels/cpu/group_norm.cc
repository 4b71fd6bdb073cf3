// GroupNorm (the fused kind fuse_group_norm makes, float32): per (batch, group), the mean and
// then the variance of x - mean over the group's channels and positions, then per channel
// y = (x - mean) * rstd * scale_c + shift_c, and SiLU y * sigmoid(y) when the node has it. scale_c
// and shift_c fold the group's InstanceNormalization scale and bias into the channel's gamma and
// beta once, at plan time. Three passes over the group (two reads, one read and write) instead of
// the five of InstanceNormalization followed by the affine and SiLU kernel; the (batch, group)
// pairs are split over the thread pool.
#include <cmath>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// Sum of f(x[i]) over [0, n), in vector accumulators.
template <class F>
float sum_of(const float* x, int64_t n, F&& f) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  V acc = hn::Zero(d);
  int64_t i = 0;
  for (; i + L <= n; i += L) acc = hn::Add(acc, f(hn::LoadU(d, x + i)));
  if (i < n) {
    const auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    acc = hn::Add(acc, hn::IfThenElseZero(m, f(hn::MaskedLoad(m, d, x + i))));
  }
  return hn::GetLane(hn::SumOfLanes(d, acc));
}

class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(int64_t channels, int64_t groups, int64_t spatial, float eps, bool silu, std::vector<float> scale,
                  std::vector<float> shift)
      : channels_(channels), groups_(groups), spatial_(spatial), eps_(eps), silu_(silu), scale_(std::move(scale)),
        shift_(std::move(shift)) {}

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    const int64_t per_group = channels_ / groups_, n = per_group * spatial_;
    const int64_t items = in[0].numel() / n;  // (batch, group) pairs
    parallel_range(items, items * n * 3, 1, [&](int64_t s, int64_t e) {
      for (int64_t item = s; item < e; ++item) normalize_group(x + item * n, y + item * n, (item % groups_) * per_group, per_group);
    });
  }
  std::string name() const override { return std::string(silu_ ? "groupnorm_silu_f32_" : "groupnorm_f32_") + kIsa; }

 private:
  // The group of `count` channels from `first`, each `spatial_` floats, at xg / yg.
  void normalize_group(const float* xg, float* yg, int64_t first, int64_t count) const {
    const D d;
    const int64_t n = count * spatial_;
    const float mean = sum_of(xg, n, [](V v) { return v; }) / static_cast<float>(n);
    const V vm = hn::Set(d, mean);
    const float var = sum_of(xg, n, [&](V v) {
      const V c = hn::Sub(v, vm);
      return hn::Mul(c, c);
    }) / static_cast<float>(n);
    const float rstd = 1.f / std::sqrt(var + eps_);
    for (int64_t c = 0; c < count; ++c) {
      const V a = hn::Set(d, rstd * scale_[static_cast<size_t>(first + c)]);
      const V b = hn::Set(d, shift_[static_cast<size_t>(first + c)]);
      const float* xc = xg + c * spatial_;
      float* yc = yg + c * spatial_;
      if (silu_) {
        simd::map1(xc, yc, spatial_, [&](V v) {
          const V t = hn::MulAdd(hn::Sub(v, vm), a, b);
          return hn::Mul(t, hn::Div(hn::Set(d, 1.f), hn::Add(hn::Set(d, 1.f), simd::exp(hn::Neg(t)))));
        });
      } else {
        simd::map1(xc, yc, spatial_, [&](V v) { return hn::MulAdd(hn::Sub(v, vm), a, b); });
      }
    }
  }

  int64_t channels_, groups_, spatial_;
  float eps_;
  bool silu_;
  std::vector<float> scale_, shift_;  // per channel
};

}  // namespace

// Inputs X [N, C, ...], scale and bias [G], gamma and beta (one value per channel): all but X
// must be plan-time constants.
KernelSelection make_group_norm_kernel(const KernelRequest& r) {
  const Node& node = r.node;
  if (r.inputs.size() < 5 || !input_is(r, 0, DType::Float32)) return KernelSelection::declined("input is not float32");
  const Dims& dims = r.inputs[0].dims;
  const int64_t groups = node.attr_int("groups", 0);
  if (dims.size() < 3 || groups <= 0 || dims[1] % groups != 0) return KernelSelection::declined("channels do not split into the groups");
  const int64_t channels = dims[1];
  int64_t spatial = 1;
  for (size_t i = 2; i < dims.size(); ++i) spatial *= dims[i];
  if (channels == 0 || spatial == 0 || dims[0] == 0) return nullptr;  // nothing to normalize: the reference runs it
  const Tensor* t[4];
  const int64_t want[4] = {groups, groups, channels, channels};
  for (size_t i = 0; i < 4; ++i) {
    t[i] = constant_input(r, i + 1);
    if (!t[i] || t[i]->dtype() != DType::Float32 || t[i]->numel() != want[i])
      return KernelSelection::declined("scale, bias, gamma or beta is not a float32 plan-time constant");
  }
  const int64_t per_group = channels / groups;
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float gamma = t[2]->data<float>()[c];
    scale[static_cast<size_t>(c)] = t[0]->data<float>()[c / per_group] * gamma;
    shift[static_cast<size_t>(c)] = t[1]->data<float>()[c / per_group] * gamma + t[3]->data<float>()[c];
  }
  const std::string activation = node.attr_string("activation", "none");
  if (activation != "none" && activation != "silu") return KernelSelection::declined("activation " + activation + " is not silu");
  return std::make_unique<GroupNormKernel>(channels, groups, spatial, node.attr_float("epsilon", 1e-5f),
                                           activation == "silu", std::move(scale), std::move(shift));
}

}  // namespace fusor::cpu
