// GroupNorm (the fused kind fuse_group_norm makes, float32): per (batch, group), the mean and
// then the variance of x - mean over the group's channels and positions, then per channel
// y = (x - mean) * rstd * scale_c + shift_c, and SiLU y * sigmoid(y) when the node has it. scale_c
// and shift_c fold the group's InstanceNormalization scale and bias into the channel's gamma and
// beta once, at plan time. Three passes over the group (two reads, one read and write) instead of
// the five of InstanceNormalization followed by the affine and SiLU kernel; the (batch, group)
// pairs are split over the thread pool.
//
// It also follows oneDNN's channel-blocked layout (nChw16c, plan/layouts.h) when the convolution
// before it writes that: a block of 16 channels is then one vector per position, so per-channel
// sums and the per-channel affine are whole vectors, and the reorders to and from row-major
// around the norm disappear (U-Net: Conv -> GroupNorm -> Conv throughout).
#include <array>
#include <cmath>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/onednn_plain_io.h"
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

constexpr int64_t kBlock = 16;                  // channels per block in nChw16c
constexpr int64_t kMaxItemChannels = 64 * kBlock;  // channels one blocked work item holds

// The oneDNN name of the channel-blocked layout of `dims`, or "" where it does not apply.
std::string channel_blocked_name(const Dims& dims) {
  using tag = dnnl::memory::format_tag;
  const tag tags[] = {tag::aBc16b, tag::aBcd16b, tag::aBcde16b};
  if (dims.size() < 3 || dims.size() > 5 || dims[1] % kBlock != 0) return {};
  return onednn_layout_name(dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32,
                                               tags[dims.size() - 3]));
}

class GroupNormKernel final : public Kernel {
 public:
  GroupNormKernel(const Dims& dims, int64_t groups, float eps, bool silu, std::vector<float> scale, std::vector<float> shift)
      : channels_(dims[1]), groups_(groups), spatial_(numel_of(dims) / (dims[0] * dims[1])), eps_(eps), silu_(silu),
        scale_(std::move(scale)), shift_(std::move(shift)) {
    const int64_t per_group = channels_ / groups_;
    block_items_ = std::max<int64_t>(1, per_group / kBlock);
    const bool whole_groups = kBlock % per_group == 0 || per_group % kBlock == 0;
    if (static_cast<int64_t>(simd::lanes()) == kBlock && whole_groups && block_items_ * kBlock <= kMaxItemChannels)
      blocked_name_ = channel_blocked_name(dims);
  }

  bool follows_layout(const std::string& layout) const override { return !blocked_name_.empty() && layout == blocked_name_; }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    blocked_ = output_blocked && !inputs.empty() && inputs[0] == blocked_name_;
  }
  void output_to_plain(const Tensor& stored, Tensor& plain) const override {
    const float* s = stored.data<float>();
    float* p = plain.data<float>();
    const int64_t batch = stored.numel() / (channels_ * spatial_);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < channels_; ++c)
        for (int64_t i = 0; i < spatial_; ++i)
          p[(n * channels_ + c) * spatial_ + i] = s[((n * channels_ + c / kBlock * kBlock) * spatial_ + i * kBlock) + c % kBlock];
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    if (blocked_) return run_blocked(x, y, in[0].numel());
    const int64_t per_group = channels_ / groups_, n = per_group * spatial_;
    const int64_t items = in[0].numel() / n;  // (batch, group) pairs
    parallel_range(items, items * n * 3, 1, [&](int64_t s, int64_t e) {
      for (int64_t item = s; item < e; ++item) normalize_group(x + item * n, y + item * n, (item % groups_) * per_group, per_group);
    });
  }
  std::string name() const override { return std::string(silu_ ? "groupnorm_silu_f32_" : "groupnorm_f32_") + kIsa; }

 private:
  // Statistics are taken about an origin, the group's first value: v - mean = (v - origin) -
  // centre. With a large common offset (x = 1e4 + noise), a float sum of v loses the noise's
  // bits, and a mean held in one float is off by half its ulp, which shifts every output by that.
  // ((v - origin) - centre) * a + b, then SiLU.
  V normalized(V v, V origin, V centre, V a, V b) const {
    const V t = hn::MulAdd(hn::Sub(hn::Sub(v, origin), centre), a, b);
    return silu_ ? simd::silu(t) : t;
  }

  // nChw16c: a work item is `block_items_` consecutive blocks of one batch element (whole groups).
  void run_blocked(const float* x, float* y, int64_t numel) const {
    const int64_t item_floats = block_items_ * kBlock * spatial_, items = numel / item_floats;
    const int64_t items_per_batch = channels_ / (block_items_ * kBlock);
    parallel_range(items, numel * 3, 1, [&](int64_t s, int64_t e) {
      for (int64_t item = s; item < e; ++item)
        normalize_blocks(x + item * item_floats, y + item * item_floats, (item % items_per_batch) * block_items_ * kBlock);
    });
  }

  // Per-channel sums of f(x, origin, centre) over the item's blocks (each channel's origin and
  // centre in lanes), into `sums`.
  template <class F>
  void channel_sums(const float* x, const float* origin, const float* centre, float* sums, F&& f) const {
    const D d;
    for (int64_t b = 0; b < block_items_; ++b) {
      const float* xb = x + b * kBlock * spatial_;
      const V o = hn::LoadU(d, origin + b * kBlock), c = hn::LoadU(d, centre + b * kBlock);
      V acc = hn::Zero(d);
      for (int64_t i = 0; i < spatial_; ++i) acc = hn::Add(acc, f(hn::LoadU(d, xb + i * kBlock), o, c));
      hn::StoreU(acc, d, sums + b * kBlock);
    }
  }

  // Each channel's group statistic: the sum over the group's channels of `values`, / `divisor`.
  void group_average(float* values, int64_t channels, int64_t divisor) const {
    const int64_t per_group = channels_ / groups_;
    for (int64_t g = 0; g < channels; g += per_group) {
      float total = 0;
      for (int64_t c = g; c < g + per_group; ++c) total += values[c];
      for (int64_t c = g; c < g + per_group; ++c) values[c] = total / static_cast<float>(divisor);
    }
  }

  void normalize_blocks(const float* x, float* y, int64_t first) const {
    const D d;
    const int64_t channels = block_items_ * kBlock;
    const int64_t per_group = channels_ / groups_;
    std::array<float, kMaxItemChannels> origin{}, centre{}, var{}, a{};
    // Each channel's origin: its group's first value (the first channel's, at position 0).
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t g0 = c - c % per_group;
      origin[c] = x[g0 / kBlock * kBlock * spatial_ + g0 % kBlock];
    }
    channel_sums(x, origin.data(), centre.data(), centre.data(), [](V v, V o, V) { return hn::Sub(v, o); });
    group_average(centre.data(), channels, per_group * spatial_);
    channel_sums(x, origin.data(), centre.data(), var.data(), [](V v, V o, V c) {
      const V t = hn::Sub(hn::Sub(v, o), c);
      return hn::Mul(t, t);
    });
    group_average(var.data(), channels, per_group * spatial_);
    for (int64_t c = 0; c < channels; ++c) a[c] = scale_[static_cast<size_t>(first + c)] / std::sqrt(var[c] + eps_);
    for (int64_t b = 0; b < block_items_; ++b) {
      const V vo = hn::LoadU(d, origin.data() + b * kBlock), vc = hn::LoadU(d, centre.data() + b * kBlock);
      const V va = hn::LoadU(d, a.data() + b * kBlock), vb = hn::LoadU(d, shift_.data() + first + b * kBlock);
      const float* xb = x + b * kBlock * spatial_;
      float* yb = y + b * kBlock * spatial_;
      simd::map1(xb, yb, kBlock * spatial_, [&](V v) { return normalized(v, vo, vc, va, vb); });
    }
  }

  // The group of `count` channels from `first`, each `spatial_` floats, at xg / yg.
  void normalize_group(const float* xg, float* yg, int64_t first, int64_t count) const {
    const D d;
    const int64_t n = count * spatial_;
    const V origin = hn::Set(d, xg[0]);
    const V centre = hn::Set(d, sum_of(xg, n, [&](V v) { return hn::Sub(v, origin); }) / static_cast<float>(n));
    const float var = sum_of(xg, n, [&](V v) {
      const V c = hn::Sub(hn::Sub(v, origin), centre);
      return hn::Mul(c, c);
    }) / static_cast<float>(n);
    const float rstd = 1.f / std::sqrt(var + eps_);
    for (int64_t c = 0; c < count; ++c) {
      const V a = hn::Set(d, rstd * scale_[static_cast<size_t>(first + c)]);
      const V b = hn::Set(d, shift_[static_cast<size_t>(first + c)]);
      const float* xc = xg + c * spatial_;
      float* yc = yg + c * spatial_;
      simd::map1(xc, yc, spatial_, [&](V v) { return normalized(v, origin, centre, a, b); });
    }
  }

  int64_t channels_, groups_, spatial_;
  float eps_;
  bool silu_;
  std::vector<float> scale_, shift_;  // per channel
  int64_t block_items_ = 1;           // blocks of 16 channels per blocked work item
  std::string blocked_name_;          // the channel-blocked layout it can follow; "" if none
  bool blocked_ = false;              // input and output are in it
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
  return std::make_unique<GroupNormKernel>(dims, groups, node.attr_float("epsilon", 1e-5f), activation == "silu",
                                           std::move(scale), std::move(shift));
}

}  // namespace fusor::cpu
