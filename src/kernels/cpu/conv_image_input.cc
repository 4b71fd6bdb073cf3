// The first convolution of a vision model: a few input channels (an RGB image), a small kernel,
// read straight from NCHW and written channels-last or in oneDNN's blocked layout, whichever its
// readers take (plan/layouts.h), with its bias and activation. oneDNN has no fast kernel for
// that pair of layouts: its channels-last kernel needs the image reordered to NHWC first (a
// 3-channel reorder, then a GEMM starved of input channels), and its NCHW one writes nChw16c,
// which channels-last layers after it reorder again.
// Measured on yolo-tiny's 3 -> 16 3x3 stride-2 SiLU layer at batch 8, the oneDNN convolution
// and its reorder were ~16% of the model (docs/benchmarks.md).
//
// Each output position is one vector per block of output channels: per tap (channel, ky, kx),
// a broadcast input value times the tap's weights for the block, so every multiply is useful
// and the output is written in whole vectors. Positions go eight at a time to share the weight
// loads and hide the multiply-add latency; border positions, where some taps fall in the
// padding, skip those taps. When the output must stay row-major it is written through a small
// per-tile transpose.
#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/epilogue_activation.h"
#include "kernels/cpu/onednn_plain_io.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// Input channels and taps (channels x kernel positions) up to which this kernel takes the layer:
// beyond them oneDNN's own kernels have enough input channels to be efficient.
constexpr int64_t kMaxChannels = 4, kMaxTaps = 64;
// Output positions per register block, and per tile of the row-major path's transpose.
constexpr int64_t kBlock = 8, kTile = 64;

struct Geometry {
  int64_t N, C, H, W, OC, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL;
  int64_t taps() const { return C * KH * KW; }
};

class ImageInputConvKernel final : public Kernel {
 public:
  ImageInputConvKernel(const Geometry& g, const float* w, const float* bias, EpilogueActivation act, float alpha, std::string name)
      : g_(g), act_(act), params_{.alpha = alpha}, name_(std::move(name)) {
    const int64_t L = static_cast<int64_t>(hn::Lanes(D())), blocks = g.OC / L, taps = g.taps();
    // [block][tap][lane]: one vector of the block's output channels per tap.
    weights_.assign(static_cast<size_t>(blocks * taps * L), 0.f);
    for (int64_t o = 0; o < g.OC; ++o)
      for (int64_t t = 0; t < taps; ++t) weights_[static_cast<size_t>(((o / L) * taps + t) * L + o % L)] = w[o * taps + t];
    bias_.assign(static_cast<size_t>(g.OC), 0.f);
    if (bias) std::copy(bias, bias + g.OC, bias_.begin());
    // Input offsets of the taps relative to a position's top-left input, in weight order.
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t ky = 0; ky < g.KH; ++ky)
        for (int64_t kx = 0; kx < g.KW; ++kx) tap_offsets_.push_back((c * g.H + ky * g.DH) * g.W + kx * g.DW);
  }

  std::string name() const override { return name_; }
  // Channels-last, or oneDNN's blocked layout (a block of output channels per position, as
  // this kernel computes them) where the readers are oneDNN convolutions: MobileNetV3's first
  // depthwise layer reordered the image conv's output, which itself went through a transpose.
  std::string offered_output_layout() const override { return dense_layout_name(kChannelsLast); }
  std::vector<std::string> other_output_layouts() const override { return {onednn_layout_name(blocked_desc())}; }
  void use_output_layout(const std::string& layout) override { blocked_ = layout != offered_output_layout(); }
  void use_layouts(std::span<const std::string> /*inputs*/, bool output_blocked) override {
    blocked_ = blocked_ && output_blocked;
    channels_last_ = output_blocked && !blocked_;
  }
  void output_to_plain(const Tensor& stored, Tensor& plain) const override {
    if (channels_last_) dense_to_plain(stored.raw(), plain.raw(), sizeof(float), stored.dims(), kChannelsLast);
    if (!blocked_) return;
    const int64_t L = lanes(), hw = g_.OH * g_.OW;
    const float* from = stored.data<float>();
    float* to = plain.data<float>();
    for (int64_t n = 0; n < g_.N; ++n)
      for (int64_t c = 0; c < g_.OC; ++c)
        for (int64_t i = 0; i < hw; ++i) to[(n * g_.OC + c) * hw + i] = from[((n * (g_.OC / L) + c / L) * hw + i) * L + c % L];
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    const int64_t rows = g_.N * g_.OH;
    parallel_range(rows, rows * g_.OW * g_.OC * g_.taps(), 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) row(x, y, r / g_.OH, r % g_.OH);
    });
  }

 private:
  static inline const std::vector<int> kChannelsLast = {0, 2, 3, 1};
  static int64_t lanes() { return static_cast<int64_t>(hn::Lanes(D())); }
  dnnl::memory::desc blocked_desc() const {
    return dnnl::memory::desc({g_.N, g_.OC, g_.OH, g_.OW}, dnnl::memory::data_type::f32, vector_blocked_tag());
  }

  // Output row oh of image n, every block of output channels, in tiles of positions.
  void row(const float* x, float* y, int64_t n, int64_t oh) const {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d)), blocks = g_.OC / L, taps = g_.taps();
    const int64_t iy0 = oh * g_.SH - g_.PT;
    const bool rows_inside = iy0 >= 0 && iy0 + (g_.KH - 1) * g_.DH < g_.H;
    // Positions whose taps are all inside the image horizontally: [ox_lo, ox_hi).
    const int64_t ox_lo = std::min(g_.OW, (g_.PL + g_.SW - 1) / g_.SW);
    const int64_t last_start = g_.W - 1 - (g_.KW - 1) * g_.DW + g_.PL;  // the largest ox * SW that fits
    const int64_t ox_hi = std::max(ox_lo, std::min(g_.OW, last_start < 0 ? 0 : last_start / g_.SW + 1));
    const float* image = x + n * g_.C * g_.H * g_.W;
    alignas(64) float tile[kTile * 16];  // kTile positions of one block (16 lanes at most)
    for (int64_t b = 0; b < blocks; ++b) {
      const float* wb = weights_.data() + b * taps * L;
      const V bias = hn::LoadU(d, bias_.data() + b * L);
      // Channels-last and blocked outputs take each position's vector in place; row-major goes
      // through the tile.
      float* row_out = blocked_ ? y + (((n * blocks + b) * g_.OH + oh) * g_.OW) * L
                                : y + ((n * g_.OH + oh) * g_.OW) * g_.OC + b * L;
      const int64_t pos_stride = blocked_ ? L : g_.OC;
      for (int64_t t0 = 0; t0 < g_.OW; t0 += kTile) {
        const int64_t t1 = std::min(g_.OW, t0 + kTile);
        auto store = [&](int64_t ox, V acc) {
          if (channels_last_ || blocked_) hn::StoreU(activate(acc), d, row_out + ox * pos_stride);
          else hn::Store(activate(acc), d, tile + (ox - t0) * L);
        };
        int64_t ox = t0;
        if (rows_inside) {
          const int64_t in_lo = std::clamp(ox_lo, t0, t1), in_hi = std::clamp(ox_hi, in_lo, t1);
          for (; ox < in_lo; ++ox) store(ox, border(image, wb, bias, iy0, ox));
          const float* at = image + iy0 * g_.W - g_.PL;
          for (; ox + kBlock <= in_hi; ox += kBlock) {
            const auto acc = interior<kBlock>(at + ox * g_.SW, wb, bias);
            for (int64_t i = 0; i < kBlock; ++i) store(ox + i, acc[static_cast<size_t>(i)]);
          }
          for (; ox < in_hi; ++ox) store(ox, interior<1>(at + ox * g_.SW, wb, bias)[0]);
        }
        for (; ox < t1; ++ox) store(ox, border(image, wb, bias, iy0, ox));
        if (!channels_last_ && !blocked_) write_tile(tile, y, n, oh, b, t0, t1);
      }
    }
  }

  // kN consecutive positions whose taps are all inside the image (kBlock of them: independent
  // accumulators, enough to cover the multiply-add latency); `at` is the first one's top-left input.
  template <int64_t kN>
  std::array<V, kN> interior(const float* at, const float* wb, V bias) const {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d)), sw = g_.SW;
    std::array<V, kN> acc;
    acc.fill(bias);
    for (size_t t = 0; t < tap_offsets_.size(); ++t) {
      const V w = hn::LoadU(d, wb + static_cast<int64_t>(t) * L);
      const float* p = at + tap_offsets_[t];
      for (int64_t i = 0; i < kN; ++i)
        acc[static_cast<size_t>(i)] = hn::MulAdd(hn::Set(d, p[i * sw]), w, acc[static_cast<size_t>(i)]);
    }
    return acc;
  }

  // One position, skipping the taps that fall in the padding.
  V border(const float* image, const float* wb, V acc, int64_t iy0, int64_t ox) const {
    const D d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d)), ix0 = ox * g_.SW - g_.PL;
    int64_t t = 0;
    for (int64_t c = 0; c < g_.C; ++c)
      for (int64_t ky = 0; ky < g_.KH; ++ky)
        for (int64_t kx = 0; kx < g_.KW; ++kx, ++t) {
          const int64_t iy = iy0 + ky * g_.DH, ix = ix0 + kx * g_.DW;
          if (iy < 0 || iy >= g_.H || ix < 0 || ix >= g_.W) continue;
          acc = hn::MulAdd(hn::Set(d, image[(c * g_.H + iy) * g_.W + ix]), hn::LoadU(d, wb + t * L), acc);
        }
    return acc;
  }

  V activate(V v) const { return apply_activation(act_, v, params_); }

  // Positions [t0, t1) of output row (n, oh), channel block b, from the tile into row-major y.
  void write_tile(const float* tile, float* y, int64_t n, int64_t oh, int64_t b, int64_t t0, int64_t t1) const {
    const int64_t L = static_cast<int64_t>(hn::Lanes(D()));
    for (int64_t l = 0; l < L; ++l) {
      float* dst = y + ((n * g_.OC + b * L + l) * g_.OH + oh) * g_.OW;
      for (int64_t ox = t0; ox < t1; ++ox) dst[ox] = tile[(ox - t0) * L + l];
    }
  }

  Geometry g_;
  EpilogueActivation act_;
  unary_ops::Params params_;
  std::string name_;
  std::vector<float> weights_, bias_;
  std::vector<int64_t> tap_offsets_;
  bool channels_last_ = false, blocked_ = false;  // the output's layout: else row-major
};

}  // namespace

std::unique_ptr<Kernel> make_image_input_conv(const KernelRequest& r, const ConvEpilogue& epi) {
  static const bool on = env_switch_on("FUSOR_CONV_IMAGE_INPUT");
  const int64_t L = static_cast<int64_t>(hn::Lanes(D()));
  const auto operands = own_conv_operands(r, epi);
  if (!on || L > 16 || epi.residual >= 0 || !operands) return nullptr;
  const Tensor *w = operands->weights, *b = operands->bias;
  const auto s = onednn_conv_shape(r.node, r.inputs[0].dims, r.inputs[1].dims, r.outputs[0].dims);
  if (!s || s->group != 1 || s->C > kMaxChannels || s->OC % L != 0) return nullptr;
  const Geometry g{.N = s->src[0], .C = s->C, .H = s->src[2], .W = s->src[3], .OC = s->OC, .OH = s->dst[2],
                   .OW = s->dst[3], .KH = s->kernel[0], .KW = s->kernel[1], .SH = s->strides[0], .SW = s->strides[1],
                   .DH = s->dilations[0] + 1, .DW = s->dilations[1] + 1, .PT = s->pad_l[0], .PL = s->pad_l[1]};
  if (g.taps() > kMaxTaps) return nullptr;
  std::string name = std::string("conv2d_f32") + (b ? "_bias" : "") +
                     (epi.activation != "none" ? "_" + epi.activation : "") + "_image_input_" + kIsa;
  return std::make_unique<ImageInputConvKernel>(g, w->data<float>(), b ? b->data<float>() : nullptr, operands->activation, epi.alpha,
                                                std::move(name));
}

}  // namespace fusor::cpu
