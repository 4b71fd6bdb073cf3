// 3x3 stride-1 convolutions as Winograd F(2x2, 3x3), for CPUs where oneDNN 2.6 has no Winograd
// kernel (everything below AVX-512). oneDNN's AVX2 direct kernel reaches ~85-90 GFLOP/s on
// ResNet-18's deep layers (14x14 and 7x7 outputs, 256-512 channels) against ~130 for its sgemm on
// the same machine, and ONNX Runtime ran ResNet-18 1.23x faster than fusor at batch 1
// (docs/benchmarks.md). Winograd computes each 2x2 output tile from a 4x4 input tile with 16
// multiplies per channel pair instead of 36: 2.25x fewer, done as 16 GEMMs.
//
// Per chunk of tiles and block of output channels, on one thread:
//   1. input transform V = B^T d B of every 4x4 input tile, channel vectors at a time:
//      V[xi][tile][C];
//   2. 16 single-threaded sgemms M[xi] = V[xi] (tiles x C) x U[xi] (C x OC block), where
//      U = G g G^T are the weights transformed at plan time;
//   3. output transform Y = A^T M A, plus bias, residual and activation, written in place.
// Chunks and channel blocks are the thread pool's chunks: no barrier between the phases, and a
// preempted thread holds up one chunk. Activations stay in oneDNN's channel-blocked layout
// (nChw8c on AVX2), the layout of the direct convolutions and pools around them, so a ResNet's
// values move between kernels with no reorder; a plain input or output is reordered in scratch.
// F(2x2, 3x3)'s transforms only add, subtract and halve, so its rounding stays near the direct
// kernel's (F(4x4, 3x3) would save more multiplies at the cost of larger rounding).
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/epilogue_activation.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;
using dnnl::memory;

constexpr int64_t kPoints = 16;  // 4x4 transformed points per tile
// Bytes of transformed input per chunk: the chunk's tiles are as many as fit, so that V stays in
// the core's cache while its 16 GEMMs read it.
constexpr int64_t kChunkInputBytes = 1 << 20;
constexpr int64_t kMinChunkTiles = 16, kMaxChunkTiles = 256;
// Fewer tiles than this leave the 16 GEMMs too few rows to beat the direct kernel: ResNet-18's
// 7x7 layers (512 channels) ran at 0.73x with Winograd at batch 1 (16 tiles), 1.08x at batch 2
// and 1.26x at batch 8 (alternated runs of one layer, 2 threads, AVX2). Running those 16-row
// GEMMs on the outer-product kernel of decode steps (columns_gemm.h) instead of sgemm gave 0.89x:
// at batch 1 such a layer streams its weights, and transformed ones are 16/9 the size.
constexpr int64_t kMinTiles = 32;
// The narrowest block of output channels that an item's GEMMs get.
constexpr int64_t kMinChannelBlock = 64;

struct Geometry {
  int64_t N, C, H, W, OC, OH, OW, PT, PL;
  int64_t tiles_h() const { return (OH + 1) / 2; }
  int64_t tiles_w() const { return (OW + 1) / 2; }
  int64_t tiles() const { return N * tiles_h() * tiles_w(); }
};

// U[xi][c][oc] = (G g G^T)[xi] for every weight g[oc][c] (3x3), G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1].
std::vector<float> transform_weights(const float* w, int64_t C, int64_t OC) {
  std::vector<float> u(static_cast<size_t>(kPoints * C * OC));
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (oc * C + c) * 9;
      double gg[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        gg[0][j] = g[j];
        gg[1][j] = 0.5 * (double(g[j]) + g[3 + j] + g[6 + j]);
        gg[2][j] = 0.5 * (double(g[j]) - g[3 + j] + g[6 + j]);
        gg[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; ++i) {
        const double row[4] = {gg[i][0], 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]), 0.5 * (gg[i][0] - gg[i][1] + gg[i][2]),
                               gg[i][2]};
        for (int j = 0; j < 4; ++j) u[static_cast<size_t>(((i * 4 + j) * C + c) * OC + oc)] = static_cast<float>(row[j]);
      }
    }
  return u;
}

// Whether oneDNN has a Winograd convolution on this CPU (AVX-512); then conv_onednn.cc uses it.
bool onednn_has_winograd() {
  static const bool has = [] {
    try {
      memory::desc src({1, 16, 8, 8}, memory::data_type::f32, memory::format_tag::any);
      memory::desc w({16, 16, 3, 3}, memory::data_type::f32, memory::format_tag::any);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, src,
                                        w, src, {1, 1}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc(d, onednn::engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

class WinogradConvKernel final : public Kernel {
 public:
  WinogradConvKernel(const Geometry& g, std::shared_ptr<const std::vector<float>> u, const float* bias,
                     EpilogueActivation act, float alpha, int residual, std::string name)
      : g_(g), u_(std::move(u)), act_(act), params_{.alpha = alpha}, residual_(residual), name_(std::move(name)) {
    const int64_t L = lanes();
    bias_.assign(static_cast<size_t>(g.OC), 0.f);
    if (bias) std::copy(bias, bias + g.OC, bias_.begin());
    threads_ = thread_width();
    // Chunks of equal size, a multiple of the threads when there are several: with a short last
    // chunk, one thread idled for a third of ResNet-18's 56x56 layers at batch 1.
    const int64_t most = std::clamp(kChunkInputBytes / (kPoints * g.C * 4), kMinChunkTiles, kMaxChunkTiles);
    chunks_ = (g.tiles() + most - 1) / most;
    if (chunks_ > 1) chunks_ = (chunks_ + threads_ - 1) / threads_ * threads_;
    chunk_tiles_ = (g.tiles() + chunks_ - 1) / chunks_;
    chunks_ = (g.tiles() + chunk_tiles_ - 1) / chunk_tiles_;
    // Enough items for every thread, splitting the output channels when the tiles are few.
    const int64_t blocks = std::clamp<int64_t>((2 * threads_ + chunks_ - 1) / chunks_, 1,
                                               std::max<int64_t>(1, g.OC / kMinChannelBlock));
    channel_block_ = (g.OC / L + blocks - 1) / blocks * L;
    channel_blocks_ = (g.OC + channel_block_ - 1) / channel_block_;
    per_thread_floats_ = kPoints * chunk_tiles_ * (g.C + channel_block_);

    const auto tag = L == 8 ? memory::format_tag::nChw8c : memory::format_tag::nChw16c;
    auto& eng = onednn::engine();
    const memory::desc src_plain({g.N, g.C, g.H, g.W}, memory::data_type::f32, memory::format_tag::nchw),
        src_blocked({g.N, g.C, g.H, g.W}, memory::data_type::f32, tag),
        dst_plain({g.N, g.OC, g.OH, g.OW}, memory::data_type::f32, memory::format_tag::nchw),
        dst_blocked({g.N, g.OC, g.OH, g.OW}, memory::data_type::f32, tag);
    src_layout_ = onednn_layout_name(src_blocked);
    dst_layout_ = onednn_layout_name(dst_blocked);
    src_in_ = Reorder{dnnl::reorder(dnnl::reorder::primitive_desc(eng, src_plain, eng, src_blocked)),
                      memory(src_plain, eng, DNNL_MEMORY_NONE), memory(src_blocked, eng, DNNL_MEMORY_NONE)};
    acc_in_ = Reorder{dnnl::reorder(dnnl::reorder::primitive_desc(eng, dst_plain, eng, dst_blocked)),
                      memory(dst_plain, eng, DNNL_MEMORY_NONE), memory(dst_blocked, eng, DNNL_MEMORY_NONE)};
    dst_out_ = Reorder{dnnl::reorder(dnnl::reorder::primitive_desc(eng, dst_blocked, eng, dst_plain)),
                       memory(dst_blocked, eng, DNNL_MEMORY_NONE), memory(dst_plain, eng, DNNL_MEMORY_NONE)};
    src_bytes_ = src_blocked.get_size();
    dst_bytes_ = dst_blocked.get_size();
  }

  std::string name() const override { return name_; }
  // On the OpenMP team: the direct convolutions and pools around it, and its own reorders, are
  // OpenMP's, and a plan that switches between the team and the pool wakes one at every step.
  bool uses_openmp() const override { return true; }
  size_t scratch_bytes() const override {
    return static_cast<size_t>(per_thread_floats_ * threads_) * sizeof(float) + (src_blocked_ ? 0 : align(src_bytes_)) +
           (dst_blocked_ ? 0 : align(dst_bytes_)) + (residual_ >= 0 && !acc_blocked_ ? align(dst_bytes_) : 0);
  }

  std::string offered_output_layout() const override { return dst_layout_; }
  bool accepts_input_layout(size_t index, const std::string& layout) const override {
    if (index == 0) return layout == src_layout_;
    return residual_ >= 0 && index == static_cast<size_t>(residual_) && layout == dst_layout_;
  }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    auto blocked = [&](int i) { return i >= 0 && static_cast<size_t>(i) < inputs.size() && !inputs[i].empty(); };
    src_blocked_ = blocked(0);
    acc_blocked_ = blocked(residual_);
    dst_blocked_ = output_blocked;
  }
  void output_to_plain(const Tensor& stored, Tensor& plain) const override {
    if (dst_blocked_) dst_out_.run(stored.raw(), plain.raw());
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    // Blocked copies of plain inputs and output, after the threads' scratch.
    std::byte* at = scratch.data() + static_cast<size_t>(per_thread_floats_ * threads_) * sizeof(float);
    auto blocked_copy = [&](size_t bytes) {
      float* p = reinterpret_cast<float*>(at);
      at += align(bytes);
      return p;
    };
    const float* src = in[0].data<float>();
    if (!src_blocked_) {
      float* copy = blocked_copy(src_bytes_);
      src_in_.run(src, copy);
      src = copy;
    }
    const float* acc = residual_ >= 0 ? in[static_cast<size_t>(residual_)].data<float>() : nullptr;
    if (acc && !acc_blocked_) {
      float* copy = blocked_copy(dst_bytes_);
      acc_in_.run(acc, copy);
      acc = copy;
    }
    float* dst = dst_blocked_ ? out[0].data<float>() : blocked_copy(dst_bytes_);
    float* per_thread = reinterpret_cast<float*>(scratch.data());
    const int width = std::min(threads_, thread_width());
    parallel_chunks(chunks_ * channel_blocks_, width, [&](int64_t item, int p) {
      const onednn::OmpThreads one(1);  // else oneDNN's sgemm opens a team of the caller's width
      item_run(item % chunks_, item / chunks_, src, acc, dst, per_thread + per_thread_floats_ * p);
    });
    if (!dst_blocked_) dst_out_.run(dst, out[0].raw());
  }

 private:
  struct Reorder {
    dnnl::reorder prim;
    memory from, to;
    void run(const void* a, void* b) {
      from.set_data_handle(const_cast<void*>(a));
      to.set_data_handle(b);
      onednn::execute_reorder(prim, from, to);
      onednn::stream().wait();
    }
  };

  static int64_t lanes() { return static_cast<int64_t>(hn::Lanes(D())); }
  static size_t align(size_t bytes) { return (bytes + 63) / 64 * 64; }

  // Tiles [chunk * chunk_tiles_, +nt) for output channels [block * channel_block_, +noc).
  void item_run(int64_t chunk, int64_t block, const float* src, const float* acc, float* dst, float* scratch) const {
    const int64_t t0 = chunk * chunk_tiles_, nt = std::min(chunk_tiles_, g_.tiles() - t0);
    const int64_t oc0 = block * channel_block_, noc = std::min(channel_block_, g_.OC - oc0);
    float* v = scratch;                              // [16][nt][C]
    float* m = scratch + kPoints * chunk_tiles_ * g_.C;  // [16][nt][noc]
    input_transform(src, t0, nt, v);
    const float* u = u_->data();
    for (int64_t xi = 0; xi < kPoints; ++xi)
      dnnl_sgemm('N', 'N', nt, noc, g_.C, 1.f, v + xi * nt * g_.C, g_.C, u + xi * g_.C * g_.OC + oc0, g_.OC, 0.f,
                 m + xi * nt * noc, noc);
    output_transform(m, t0, nt, oc0, noc, acc, dst);
  }

  // V = B^T d B per 4x4 input tile d (zeros outside the image), B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
  void input_transform(const float* src, int64_t t0, int64_t nt, float* v) const {
    const D d;
    const int64_t L = lanes(), blocks = g_.C / L, th = g_.tiles_h(), tw = g_.tiles_w();
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t tile = t0 + t, n = tile / (th * tw), ty = tile / tw % th, tx = tile % tw;
      const int64_t iy0 = 2 * ty - g_.PT, ix0 = 2 * tx - g_.PL;
      const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + 4 <= g_.H && ix0 + 4 <= g_.W;
      for (int64_t b = 0; b < blocks; ++b) {
        const float* plane = src + (n * blocks + b) * g_.H * g_.W * L;
        V x[4][4];
        for (int64_t r = 0; r < 4; ++r)
          for (int64_t c = 0; c < 4; ++c) {
            const int64_t iy = iy0 + r, ix = ix0 + c;
            x[r][c] = inside || (iy >= 0 && iy < g_.H && ix >= 0 && ix < g_.W) ? hn::LoadU(d, plane + (iy * g_.W + ix) * L)
                                                                              : hn::Zero(d);
          }
        V s[4][4];  // B^T d
        for (int c = 0; c < 4; ++c) {
          s[0][c] = hn::Sub(x[0][c], x[2][c]);
          s[1][c] = hn::Add(x[1][c], x[2][c]);
          s[2][c] = hn::Sub(x[2][c], x[1][c]);
          s[3][c] = hn::Sub(x[1][c], x[3][c]);
        }
        float* out = v + t * g_.C + b * L;
        const int64_t step = nt * g_.C;  // between points
        for (int r = 0; r < 4; ++r) {
          hn::StoreU(hn::Sub(s[r][0], s[r][2]), d, out + (r * 4 + 0) * step);
          hn::StoreU(hn::Add(s[r][1], s[r][2]), d, out + (r * 4 + 1) * step);
          hn::StoreU(hn::Sub(s[r][2], s[r][1]), d, out + (r * 4 + 2) * step);
          hn::StoreU(hn::Sub(s[r][1], s[r][3]), d, out + (r * 4 + 3) * step);
        }
      }
    }
  }

  // Y = A^T m A per tile, A^T = [1 1 1 0; 0 1 -1 -1], then bias, residual and activation.
  void output_transform(const float* m, int64_t t0, int64_t nt, int64_t oc0, int64_t noc, const float* acc,
                        float* dst) const {
    const D d;
    const int64_t L = lanes(), blocks = g_.OC / L, th = g_.tiles_h(), tw = g_.tiles_w();
    const int64_t step = nt * noc;  // between points
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t tile = t0 + t, n = tile / (th * tw), oy = 2 * (tile / tw % th), ox = 2 * (tile % tw);
      for (int64_t j = 0; j < noc; j += L) {
        const float* p = m + t * noc + j;
        V a[2][4];  // A^T m
        for (int c = 0; c < 4; ++c) {
          const V m0 = hn::LoadU(d, p + (0 * 4 + c) * step), m1 = hn::LoadU(d, p + (1 * 4 + c) * step),
                  m2 = hn::LoadU(d, p + (2 * 4 + c) * step), m3 = hn::LoadU(d, p + (3 * 4 + c) * step);
          a[0][c] = hn::Add(hn::Add(m0, m1), m2);
          a[1][c] = hn::Sub(hn::Sub(m1, m2), m3);
        }
        const int64_t b = (oc0 + j) / L;
        const V bias = hn::LoadU(d, bias_.data() + oc0 + j);
        float* plane = dst + (n * blocks + b) * g_.OH * g_.OW * L;
        const float* acc_plane = acc ? acc + (n * blocks + b) * g_.OH * g_.OW * L : nullptr;
        for (int r = 0; r < 2 && oy + r < g_.OH; ++r) {
          const V y[2] = {hn::Add(hn::Add(a[r][0], a[r][1]), a[r][2]), hn::Sub(hn::Sub(a[r][1], a[r][2]), a[r][3])};
          for (int c = 0; c < 2 && ox + c < g_.OW; ++c) {
            const int64_t at = ((oy + r) * g_.OW + ox + c) * L;
            V out = hn::Add(y[c], bias);
            if (acc_plane) out = hn::Add(out, hn::LoadU(d, acc_plane + at));
            hn::StoreU(apply_activation(act_, out, params_), d, plane + at);
          }
        }
      }
    }
  }

  Geometry g_;
  std::shared_ptr<const std::vector<float>> u_;  // transformed weights, shared between plans
  std::vector<float> bias_;
  EpilogueActivation act_;
  unary_ops::Params params_;
  int residual_;
  std::string name_;
  int threads_ = 1;
  int64_t chunk_tiles_ = 0, chunks_ = 0, channel_block_ = 0, channel_blocks_ = 0, per_thread_floats_ = 0;
  std::string src_layout_, dst_layout_;
  mutable Reorder src_in_, acc_in_, dst_out_;
  size_t src_bytes_ = 0, dst_bytes_ = 0;
  bool src_blocked_ = false, acc_blocked_ = false, dst_blocked_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_winograd_conv(const KernelRequest& r, const ConvEpilogue& epi, bool always) {
  static const bool on = env_switch_on("FUSOR_CONV_WINOGRAD");
  const int64_t L = static_cast<int64_t>(hn::Lanes(D()));
  const auto operands = own_conv_operands(r, epi);
  if (!on || (L != 8 && L != 16) || (onednn_has_winograd() && !always) || !operands) return nullptr;
  const Tensor *w = operands->weights, *b = operands->bias;
  const auto s = onednn_conv_shape(r.node, r.inputs[0].dims, r.inputs[1].dims, r.outputs[0].dims);
  if (!s || s->group != 1 || s->kernel != std::vector<int64_t>{3, 3} || s->strides != dnnl::memory::dims{1, 1} ||
      s->dilations != dnnl::memory::dims{0, 0} || s->C % L != 0 || s->OC % L != 0)
    return nullptr;
  const Geometry g{.N = s->src[0], .C = s->C, .H = s->src[2], .W = s->src[3], .OC = s->OC, .OH = s->dst[2],
                   .OW = s->dst[3], .PT = s->pad_l[0], .PL = s->pad_l[1]};
  if (g.tiles() < kMinTiles && !always) return nullptr;
  std::string name = std::string("conv2d_f32") + (b ? "_bias" : "") + (epi.residual >= 0 ? "_residual" : "") +
                     (epi.activation != "none" ? "_" + epi.activation : "") + "_winograd_f2x3_" + kIsa;
  try {
    return std::make_unique<WinogradConvKernel>(g, shared_derived_weights(transform_weights(w->data<float>(), g.C, g.OC)),
                                                b ? b->data<float>() : nullptr, operands->activation, epi.alpha, epi.residual,
                                                std::move(name));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
