#include "kernels/cpu/packed_gemv.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/columns_gemm.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/unary_ops.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using simd::D;
using simd::V;
namespace hn = simd::hn;

constexpr int64_t kPanel = 64;   // columns per panel of the packed layout
constexpr int64_t kKBlock = 16;  // K rows are padded to a multiple of this
constexpr int64_t kMaxRows = 16;  // rows of x the transposed layout takes (bench/generate_steps decode-16)
constexpr size_t kLanes = HWY_LANES(float);
static_assert(kPanel % kLanes == 0);
constexpr size_t kVecs = kPanel / kLanes;

// `rows` dense rows of `cols` floats.
bool dense_rows(const memory::desc& md, int64_t rows, int64_t cols) {
  if (md.data_type() != memory::data_type::f32 || md.data.format_kind != dnnl_blocked || md.data.ndims != 2) return false;
  const auto& b = md.data.format_desc.blocking;
  return md.dims()[0] == rows && md.dims()[1] == cols && b.inner_nblks == 0 && b.strides[1] == 1 &&
         (rows == 1 || b.strides[0] == cols);
}

// out[0..64) = x[0..K) times one panel (K rows of 64 floats). With 4 vectors per row (AVX-512),
// even and odd rows go to separate accumulators: two FMA chains per column keep the loads busy.
void panel_dot(const float* x, int64_t k, const float* w, float* out) {
  const D d;
  constexpr bool kTwoChains = kVecs <= 4;
  V a[kVecs], b[kVecs];
  for (size_t i = 0; i < kVecs; ++i) a[i] = b[i] = hn::Zero(d);
  int64_t r = 0;
  if constexpr (kTwoChains) {
    for (; r + 2 <= k; r += 2) {
      const V x0 = hn::Set(d, x[r]), x1 = hn::Set(d, x[r + 1]);
      const float* p = w + r * kPanel;
      for (size_t i = 0; i < kVecs; ++i) a[i] = hn::MulAdd(x0, hn::LoadU(d, p + i * kLanes), a[i]);
      for (size_t i = 0; i < kVecs; ++i) b[i] = hn::MulAdd(x1, hn::LoadU(d, p + kPanel + i * kLanes), b[i]);
    }
  }
  for (; r < k; ++r) {
    const V x0 = hn::Set(d, x[r]);
    const float* p = w + r * kPanel;
    for (size_t i = 0; i < kVecs; ++i) a[i] = hn::MulAdd(x0, hn::LoadU(d, p + i * kLanes), a[i]);
  }
  for (size_t i = 0; i < kVecs; ++i) hn::StoreU(hn::Add(a[i], b[i]), d, out + i * kLanes);
}

// acc[c] = x times column c of the transposed layout, for C columns. Every column is one
// contiguous stream of K weights; each load of x serves C columns.
template <int C>
void block_dot(const float* x, int64_t k, const float* w, float* acc) {
  const D d;
  const auto lanes = static_cast<int64_t>(kLanes);
  const int64_t body = k / lanes * lanes;
  V a[C];
  for (int c = 0; c < C; ++c) a[c] = hn::Zero(d);
  for (int64_t i = 0; i < body; i += lanes) {
    const V xv = hn::LoadU(d, x + i);
    for (int c = 0; c < C; ++c) a[c] = hn::MulAdd(xv, hn::LoadU(d, w + c * k + i), a[c]);
  }
  for (int c = 0; c < C; ++c) {
    float sum = hn::GetLane(hn::SumOfLanes(d, a[c]));
    for (int64_t i = body; i < k; ++i) sum += x[i] * w[c * k + i];
    acc[c] = sum;
  }
}

// acc[c] for `cols` (<= kPanel) columns of the transposed layout and one row of x: four columns
// per load of x.
void columns_dot(const float* x, int64_t k, const float* w, int64_t cols, float* acc) {
  int64_t c = 0;
  for (; c + 4 <= cols; c += 4) block_dot<4>(x, k, w + c * k, acc + c);
  for (; c < cols; ++c) block_dot<1>(x, k, w + c * k, acc + c);
}

// One eltwise post-op, as oneDNN 2.6 defines it, with the elementwise table's formulas.
V eltwise(const PackedGemv::Step& s, V v) {
  using A = dnnl::algorithm;
  namespace u = unary_ops;
  const D d;
  const u::Params p{.alpha = s.alpha};
  V r;
  switch (s.alg) {
    case A::eltwise_relu: r = s.alpha == 0.f ? u::ReluOp::apply(v, p) : u::LeakyReluOp::apply(v, p); break;
    case A::eltwise_tanh: r = u::TanhOp::apply(v, p); break;
    case A::eltwise_logistic: r = u::SigmoidOp::apply(v, p); break;
    case A::eltwise_swish: r = hn::Mul(v, u::SigmoidOp::apply(hn::Mul(v, hn::Set(d, s.alpha)), p)); break;
    case A::eltwise_gelu_erf: r = u::GeluErfOp::apply(v, p); break;
    case A::eltwise_gelu_tanh: r = u::GeluTanhOp::apply(v, p); break;
    case A::eltwise_hardswish: r = u::HardSwishOp::apply(v, p); break;  // x * relu6(x + 3) / 6
    default: r = hn::MulAdd(v, hn::Set(d, s.alpha), hn::Set(d, s.beta)); break;  // eltwise_linear
  }
  return s.scale == 1.f ? r : hn::Mul(r, hn::Set(d, s.scale));
}

bool known_eltwise(dnnl::algorithm a) {
  using A = dnnl::algorithm;
  for (A k : {A::eltwise_relu, A::eltwise_tanh, A::eltwise_logistic, A::eltwise_swish, A::eltwise_gelu_erf,
              A::eltwise_gelu_tanh, A::eltwise_hardswish, A::eltwise_linear})
    if (a == k) return true;
  return false;
}

bool env_on() {
  static const bool on = env_switch_on("FUSOR_PACKED_GEMV");  // =0: oneDNN runs one-row GEMMs too
  return on;
}

}  // namespace

std::optional<PackedGemv> PackedGemv::make(const memory::desc& src, const memory::desc& weights,
                                           const memory::desc& dst, bool has_bias, const dnnl::post_ops& post_ops) {
  if (!env_on() || src.data.ndims != 2 || weights.data.ndims != 2) return std::nullopt;
  const int64_t m = src.dims()[0], k = weights.dims()[0], n = weights.dims()[1];
  if (m < 1 || m > kMaxRows || !dense_rows(src, m, k) || !dense_rows(dst, m, n) ||
      weights.data_type() != memory::data_type::f32 || weights.data.format_kind != dnnl_blocked)
    return std::nullopt;
  const auto& b = weights.data.format_desc.blocking;
  PackedGemv g;
  if (b.inner_nblks == 0 && b.strides[0] == 1 && b.strides[1] == k) {
    g.columns_ = true;  // "ba"
  } else {
    if (m != 1) return std::nullopt;  // brgemm's own kernel is the faster one from two rows on
    // BA16a64b: inner blocks of 16 K rows x 64 columns, K blocks innermost of the outer dims.
    const int64_t k_padded = weights.data.padded_dims[0];
    if (b.inner_nblks != 2 || b.inner_blks[0] != kKBlock || b.inner_idxs[0] != 0 || b.inner_blks[1] != kPanel ||
        b.inner_idxs[1] != 1 || b.strides[0] != kKBlock * kPanel || b.strides[1] != k_padded * kPanel)
      return std::nullopt;
    g.panel_stride_ = b.strides[1];
  }
  if (weights.data.offset0 != 0) return std::nullopt;
  g.m_ = m;
  g.k_ = k;
  g.n_ = n;
  g.bias_ = has_bias;
  for (int i = 0; i < post_ops.len(); ++i) {
    Step s;
    if (post_ops.kind(i) == dnnl::primitive::kind::eltwise) {
      post_ops.get_params_eltwise(i, s.scale, s.alg, s.alpha, s.beta);
      if (!known_eltwise(s.alg)) return std::nullopt;
    } else if (post_ops.kind(i) == dnnl::primitive::kind::binary) {
      memory::desc src1;
      post_ops.get_params_binary(i, s.alg, src1);
      if (s.alg != dnnl::algorithm::binary_add || !(dense_rows(src1, 1, n) || dense_rows(src1, m, n)))
        return std::nullopt;
      s.add = true;
      s.row_stride = src1.dims()[0] == 1 ? 0 : n;
    } else {
      return std::nullopt;
    }
    g.steps_.push_back(s);
  }
  return g;
}

void PackedGemv::execute(const float* x, const float* packed, const float* bias, float* y,
                         std::span<const float* const> binary) const {
  const int64_t panels = (n_ + kPanel - 1) / kPanel;
  // More rows on the transposed layout: x transposed once, read by every thread.
  thread_local std::vector<float> transposed;
  int64_t padded = 0;
  if (columns_ && m_ > 1) {
    transposed.resize(static_cast<size_t>(k_ * columns_gemm_max_rows()));
    padded = transpose_rows(x, m_, k_, transposed);
  }
  const float* xt = transposed.data();
  parallel_range(panels, m_ * k_ * n_, 1, [&](int64_t p0, int64_t p1) {
    const D d;
    HWY_ALIGN float acc[kMaxRows * kPanel];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c0 = p * kPanel, cols = std::min(kPanel, n_ - c0);
      if (columns_ && m_ > 1) columns_gemm(xt, m_, padded, k_, packed + c0 * k_, cols, acc, kPanel);
      else if (columns_) columns_dot(x, k_, packed + c0 * k_, cols, acc);
      else panel_dot(x, k_, packed + p * panel_stride_, acc);
      for (int64_t r = 0; r < m_; ++r)
        for (int64_t j = 0; j < cols; j += static_cast<int64_t>(kLanes)) {
          const auto mask = hn::FirstN(d, static_cast<size_t>(std::min<int64_t>(kLanes, cols - j)));
          const int64_t c = c0 + j;
          V v = hn::LoadU(d, acc + r * kPanel + j);
          if (bias_) v = hn::Add(v, hn::MaskedLoad(mask, d, bias + c));
          size_t next_binary = 0;
          for (const Step& s : steps_) {
            if (!s.add) {
              v = eltwise(s, v);
              continue;
            }
            v = hn::Add(v, hn::MaskedLoad(mask, d, binary[next_binary++] + r * s.row_stride + c));
          }
          hn::BlendedStore(v, mask, d, y + r * n_ + c);
        }
    }
  });
}

}  // namespace fusor::cpu
