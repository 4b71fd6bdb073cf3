// 3x3 stride-1 convolutions as Winograd F(m x m, 3x3), for CPUs where oneDNN 2.6 has no Winograd
// kernel (everything below AVX-512). oneDNN's AVX2 direct kernel reaches ~85-90 GFLOP/s on
// ResNet-18's deep layers (14x14 and 7x7 outputs, 256-512 channels) against ~130 for its sgemm on
// the same machine, and ONNX Runtime ran ResNet-18 1.23x faster than fusor at batch 1
// (docs/benchmarks.md). Winograd computes each m x m output tile from an (m+2) x (m+2) input tile
// with (m+2)^2 multiplies per channel pair instead of 9 m^2, done as (m+2)^2 GEMMs: F(2x2, 3x3)
// does 2.25x fewer multiplies, F(4x4, 3x3) 4x fewer, and it also reads and writes 1.8x fewer
// transformed values per output. F(4x4) takes layers of few channels and enough 4x4 tiles,
// F(2x2) the rest.
//
// Per chunk of tiles and block of output channels, on one thread:
//   1. input transform V = B^T d B of every input tile, channel vectors at a time:
//      V[xi][tile][C];
//   2. (m+2)^2 single-threaded sgemms M[xi] = V[xi] (tiles x C) x U[xi] (C x OC block), where
//      U = G g G^T are the weights transformed at plan time;
//   3. output transform Y = A^T M A, plus bias, residual and activation, written in place.
// Each (chunk, channel block) is one of parallel_chunks' chunks, taken dynamically by whichever
// threads the plan runs on: no barrier between the phases, and a preempted thread holds up one. Activations stay in oneDNN's channel-blocked layout
// (nChw8c on AVX2), the layout of the direct convolutions and pools around them, so a ResNet's
// values move between kernels with no reorder; a plain input or output is reordered in scratch.
// F(2x2, 3x3)'s transforms only add, subtract and halve, so its rounding stays near the direct
// kernel's; F(4x4, 3x3)'s round more, within the twin rule on the layers it takes (Transform<4>).
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <memory>
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

// F(m x m, 3x3)'s matrices (Toom-Cook, as in Lavin and Gray): B^T (input), G (weights), A^T (output).
template <int M>
struct Transform;
template <>
struct Transform<2> {
  static constexpr int kIn = 4;
  static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr double G[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};

// Points 0, 1, -1, 1/2, -2 and infinity rather than Lavin's 0, +-1, +-2: on 64-channel layers of
// trained scale its largest error against the reference is 2.5-3x smaller (5.7e-6 against 1.7e-5
// simulated in float32; 2.3e-5 measured with +-2), within the kernels' twin rule where +-2 was not.
template <>
struct Transform<4> {
  static constexpr int kIn = 6;
  static constexpr float BT[6][6] = {{1, -1.5f, -2, 1.5f, 1, 0},  {0, -1, 0.5f, 2.5f, 1, 0}, {0, 1, -2.5f, 0.5f, 1, 0},
                                     {0, -2, -1, 2, 1, 0},        {0, 0.5f, -1, -0.5f, 1, 0}, {0, 1, -1.5f, -2, 1.5f, 1}};
  static constexpr double G[6][3] = {{1, 0, 0},
                                     {1. / 3, 1. / 3, 1. / 3},
                                     {-1. / 3, 1. / 3, -1. / 3},
                                     {-16. / 15, -8. / 15, -4. / 15},
                                     {1. / 15, -2. / 15, 4. / 15},
                                     {0, 0, 1}};
  static constexpr float AT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5f, -2, 0}, {0, 1, 1, 0.25f, 4, 0}, {0, 1, -1, 0.125f, -8, 1}};
};

// sum over k of coef[k] * get(k), skipping zero coefficients (the loops unroll, so the test folds).
template <size_t K, class Get>
inline V combine(const float (&coef)[K], Get&& get) {
  const D d;
  V acc = hn::Zero(d);
  for (size_t k = 0; k < K; ++k)
    if (coef[k] != 0.f) acc = hn::MulAdd(hn::Set(d, coef[k]), get(k), acc);
  return acc;
}

// Bytes of transformed input per chunk: the chunk's tiles are as many as fit, so that V stays in
// the core's cache while its GEMMs read it.
constexpr int64_t kChunkInputBytes = 1 << 20;
constexpr int64_t kMinChunkTiles = 16, kMaxChunkTiles = 256;
// Fewer tiles than this leave the GEMMs too few rows to beat the direct kernel: ResNet-18's
// 7x7 layers (512 channels) ran at 0.73x with Winograd at batch 1 (16 tiles), 1.08x at batch 2
// and 1.26x at batch 8 (alternated runs of one layer, 2 threads, AVX2). Running those 16-row
// GEMMs on an outer-product kernel over transposed rows instead of sgemm gave 0.89x: at batch 1
// such a layer streams its weights, and transformed ones are 16/9 the size.
constexpr int64_t kMinTiles = 32;
// F(4x4)'s transformed weights are 4x the direct kernel's, and its chunks hold fewer tiles (36
// points each), so it pays where a chunk still holds this many: 128 input channels or fewer.
// One layer alternated against F(2x2) (2 threads, AVX2): 64 and 128 channels 1.38x / 1.26x at
// batch 1 and 1.19x / 1.50x at batch 8; 256 and 512 channels 0.84x / 0.80x at batch 8 (those
// two with Lavin's points, before Transform<4>'s).
constexpr int64_t kMinF4ChunkTiles = 48;
// The narrowest block of output channels that an item's GEMMs get.
constexpr int64_t kMinChannelBlock = 64;

struct Geometry {
  int64_t N, C, H, W, OC, OH, OW, PT, PL;
  int64_t m;  // output tile size
  int64_t tiles_h() const { return (OH + m - 1) / m; }
  int64_t tiles_w() const { return (OW + m - 1) / m; }
  int64_t tiles() const { return N * tiles_h() * tiles_w(); }
};

// U[xi][c][oc] = (G g G^T)[xi] for every weight g[oc][c] (3x3), in double.
template <int M>
std::vector<float> transform_weights(const float* w, int64_t C, int64_t OC) {
  using T = Transform<M>;
  constexpr int n = T::kIn;
  std::vector<float> u(static_cast<size_t>(n * n * C * OC));
  for (int64_t oc = 0; oc < OC; ++oc)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (oc * C + c) * 9;
      double gg[n][3] = {};  // G g
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 3; ++k) gg[i][j] += T::G[i][k] * g[k * 3 + j];
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          double v = 0;  // (G g G^T)[i][j]
          for (int k = 0; k < 3; ++k) v += gg[i][k] * T::G[j][k];
          u[static_cast<size_t>(((i * n + j) * C + c) * OC + oc)] = static_cast<float>(v);
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

template <int M>
class WinogradConvKernel final : public Kernel {
  using T = Transform<M>;
  static constexpr int kIn = T::kIn;
  static constexpr int64_t kPoints = kIn * kIn;

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

    const auto tag = vector_blocked_tag();
    const memory::desc src_plain({g.N, g.C, g.H, g.W}, memory::data_type::f32, memory::format_tag::nchw),
        src_blocked({g.N, g.C, g.H, g.W}, memory::data_type::f32, tag),
        dst_plain({g.N, g.OC, g.OH, g.OW}, memory::data_type::f32, memory::format_tag::nchw),
        dst_blocked({g.N, g.OC, g.OH, g.OW}, memory::data_type::f32, tag);
    src_layout_ = onednn_layout_name(src_blocked);
    dst_layout_ = onednn_layout_name(dst_blocked);
    src_in_ = Reorder(src_plain, src_blocked);
    acc_in_ = Reorder(dst_plain, dst_blocked);
    dst_out_ = Reorder(dst_blocked, dst_plain);
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
  // A reorder between two layouts, its memories rebound to the caller's buffers on each run.
  struct Reorder {
    Reorder() = default;
    Reorder(const memory::desc& from_md, const memory::desc& to_md)
        : prim(dnnl::reorder::primitive_desc(onednn::engine(), from_md, onednn::engine(), to_md)),
          from(from_md, onednn::engine(), DNNL_MEMORY_NONE),
          to(to_md, onednn::engine(), DNNL_MEMORY_NONE) {}
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
    float* m = scratch + kPoints * chunk_tiles_ * g_.C;  // [points][nt][noc]
    input_transform(src, t0, nt, v);
    const float* u = u_->data();
    for (int64_t xi = 0; xi < kPoints; ++xi)
      dnnl_sgemm('N', 'N', nt, noc, g_.C, 1.f, v + xi * nt * g_.C, g_.C, u + xi * g_.C * g_.OC + oc0, g_.OC, 0.f,
                 m + xi * nt * noc, noc);
    output_transform(m, t0, nt, oc0, noc, acc, dst);
  }

  // V = B^T d B per input tile d (zeros outside the image).
  void input_transform(const float* src, int64_t t0, int64_t nt, float* v) const {
    const D d;
    const int64_t L = lanes(), blocks = g_.C / L, th = g_.tiles_h(), tw = g_.tiles_w();
    const int64_t step = nt * g_.C;  // between points
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t tile = t0 + t, n = tile / (th * tw), ty = tile / tw % th, tx = tile % tw;
      const int64_t iy0 = M * ty - g_.PT, ix0 = M * tx - g_.PL;
      const bool inside = iy0 >= 0 && ix0 >= 0 && iy0 + kIn <= g_.H && ix0 + kIn <= g_.W;
      for (int64_t b = 0; b < blocks; ++b) {
        const float* plane = src + (n * blocks + b) * g_.H * g_.W * L;
        V x[kIn][kIn];
        for (int64_t r = 0; r < kIn; ++r)
          for (int64_t c = 0; c < kIn; ++c) {
            const int64_t iy = iy0 + r, ix = ix0 + c;
            x[r][c] = inside || (iy >= 0 && iy < g_.H && ix >= 0 && ix < g_.W) ? hn::LoadU(d, plane + (iy * g_.W + ix) * L)
                                                                              : hn::Zero(d);
          }
        V s[kIn][kIn];  // B^T d
        for (int i = 0; i < kIn; ++i)
          for (int c = 0; c < kIn; ++c) s[i][c] = combine(T::BT[i], [&](size_t k) { return x[k][c]; });
        float* out = v + t * g_.C + b * L;
        for (int i = 0; i < kIn; ++i)
          for (int j = 0; j < kIn; ++j)
            hn::StoreU(combine(T::BT[j], [&](size_t k) { return s[i][k]; }), d, out + (i * kIn + j) * step);
      }
    }
  }

  // Y = A^T m A per tile, then bias, residual and activation.
  void output_transform(const float* m, int64_t t0, int64_t nt, int64_t oc0, int64_t noc, const float* acc,
                        float* dst) const {
    const D d;
    const int64_t L = lanes(), blocks = g_.OC / L, th = g_.tiles_h(), tw = g_.tiles_w();
    const int64_t step = nt * noc;  // between points
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t tile = t0 + t, n = tile / (th * tw), oy = M * (tile / tw % th), ox = M * (tile % tw);
      for (int64_t j = 0; j < noc; j += L) {
        const float* p = m + t * noc + j;
        V a[M][kIn];  // A^T m
        for (int c = 0; c < kIn; ++c) {
          V col[kIn];
          for (int k = 0; k < kIn; ++k) col[k] = hn::LoadU(d, p + (k * kIn + c) * step);
          for (int r = 0; r < M; ++r) a[r][c] = combine(T::AT[r], [&](size_t k) { return col[k]; });
        }
        const int64_t b = (oc0 + j) / L;
        const V bias = hn::LoadU(d, bias_.data() + oc0 + j);
        float* plane = dst + (n * blocks + b) * g_.OH * g_.OW * L;
        const float* acc_plane = acc ? acc + (n * blocks + b) * g_.OH * g_.OW * L : nullptr;
        for (int r = 0; r < M && oy + r < g_.OH; ++r)
          for (int c = 0; c < M && ox + c < g_.OW; ++c) {
            const int64_t at = ((oy + r) * g_.OW + ox + c) * L;
            V out = hn::Add(combine(T::AT[c], [&](size_t k) { return a[r][k]; }), bias);
            if (acc_plane) out = hn::Add(out, hn::LoadU(d, acc_plane + at));
            hn::StoreU(apply_activation(act_, out, params_), d, plane + at);
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

std::unique_ptr<Kernel> make_winograd_conv(const KernelRequest& r, const ConvEpilogue& epi, int tile) {
  static const bool on = env_switch_on("FUSOR_CONV_WINOGRAD");
  const int64_t L = static_cast<int64_t>(hn::Lanes(D()));
  const auto operands = own_conv_operands(r, epi);
  if (!on || (L != 8 && L != 16) || (onednn_has_winograd() && tile == 0) || !operands) return nullptr;
  const Tensor *w = operands->weights, *b = operands->bias;
  const auto s = onednn_conv_shape(r.node, r.inputs[0].dims, r.inputs[1].dims, r.outputs[0].dims);
  if (!s || s->group != 1 || s->kernel != std::vector<int64_t>{3, 3} || s->strides != dnnl::memory::dims{1, 1} ||
      s->dilations != dnnl::memory::dims{0, 0} || s->C % L != 0 || s->OC % L != 0)
    return nullptr;
  Geometry g{.N = s->src[0], .C = s->C, .H = s->src[2], .W = s->src[3], .OC = s->OC, .OH = s->dst[2],
             .OW = s->dst[3], .PT = s->pad_l[0], .PL = s->pad_l[1], .m = tile};
  if (tile == 0) {  // the larger tiles where there are enough of them
    static const bool f4 = env_switch_on("FUSOR_CONV_WINOGRAD_F4");
    g.m = 4;
    if (!f4 || g.tiles() < kMinTiles || kChunkInputBytes / (36 * g.C * 4) < kMinF4ChunkTiles) g.m = 2;
    if (g.tiles() < kMinTiles) return nullptr;
  } else if (tile != 2 && tile != 4) {
    return nullptr;
  }
  std::string name = std::string("conv2d_f32") + (b ? "_bias" : "") + (epi.residual >= 0 ? "_residual" : "") +
                     (epi.activation != "none" ? "_" + epi.activation : "") + "_winograd_f" + std::to_string(g.m) +
                     "x3_" + kIsa;
  try {
    auto make = [&]<int M>() -> std::unique_ptr<Kernel> {
      return std::make_unique<WinogradConvKernel<M>>(
          g, shared_derived_weights(transform_weights<M>(w->data<float>(), g.C, g.OC)), b ? b->data<float>() : nullptr,
          operands->activation, epi.alpha, epi.residual, std::move(name));
    };
    return g.m == 4 ? make.template operator()<4>() : make.template operator()<2>();
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
