#include "kernels/cpu/packed_gemv.h"

#include <algorithm>

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
constexpr size_t kLanes = HWY_LANES(float);
static_assert(kPanel % kLanes == 0);
constexpr size_t kVecs = kPanel / kLanes;

bool dense_row(const memory::desc& md, int64_t cols) {
  if (md.data_type() != memory::data_type::f32 || md.data.format_kind != dnnl_blocked || md.data.ndims != 2) return false;
  const auto& b = md.data.format_desc.blocking;
  return md.dims()[0] == 1 && md.dims()[1] == cols && b.inner_nblks == 0 && b.strides[1] == 1;
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

// out[0..cols) = x[0..K) times `cols` columns of the transposed layout ("ba": each column's K
// weights contiguous, what oneDNN's gemm asks for where it has no brgemm, e.g. AVX2). Four
// columns at a time share each load of x; each column is one contiguous stream.
void columns_dot(const float* x, int64_t k, const float* w, int64_t cols, float* out) {
  const D d;
  const auto lanes = static_cast<int64_t>(kLanes);
  const int64_t body = k / lanes * lanes;
  auto tail = [&](const float* col, float sum) {
    for (int64_t r = body; r < k; ++r) sum += x[r] * col[r];
    return sum;
  };
  int64_t c = 0;
  for (; c + 4 <= cols; c += 4) {
    const float* w0 = w + c * k;
    const float *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
    V a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t r = 0; r < body; r += lanes) {
      const V xv = hn::LoadU(d, x + r);
      a0 = hn::MulAdd(xv, hn::LoadU(d, w0 + r), a0);
      a1 = hn::MulAdd(xv, hn::LoadU(d, w1 + r), a1);
      a2 = hn::MulAdd(xv, hn::LoadU(d, w2 + r), a2);
      a3 = hn::MulAdd(xv, hn::LoadU(d, w3 + r), a3);
    }
    out[c] = tail(w0, hn::GetLane(hn::SumOfLanes(d, a0)));
    out[c + 1] = tail(w1, hn::GetLane(hn::SumOfLanes(d, a1)));
    out[c + 2] = tail(w2, hn::GetLane(hn::SumOfLanes(d, a2)));
    out[c + 3] = tail(w3, hn::GetLane(hn::SumOfLanes(d, a3)));
  }
  for (; c < cols; ++c) {
    const float* col = w + c * k;
    V a = hn::Zero(d);
    for (int64_t r = 0; r < body; r += lanes) a = hn::MulAdd(hn::LoadU(d, x + r), hn::LoadU(d, col + r), a);
    out[c] = tail(col, hn::GetLane(hn::SumOfLanes(d, a)));
  }
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
  const int64_t k = weights.dims()[0], n = weights.dims()[1];
  if (!dense_row(src, k) || !dense_row(dst, n) || weights.data_type() != memory::data_type::f32 ||
      weights.data.format_kind != dnnl_blocked)
    return std::nullopt;
  const auto& b = weights.data.format_desc.blocking;
  PackedGemv g;
  if (b.inner_nblks == 0 && b.strides[0] == 1 && b.strides[1] == k) {
    g.columns_ = true;  // "ba"
  } else {
    // BA16a64b: inner blocks of 16 K rows x 64 columns, K blocks innermost of the outer dims.
    const int64_t k_padded = weights.data.padded_dims[0];
    if (b.inner_nblks != 2 || b.inner_blks[0] != kKBlock || b.inner_idxs[0] != 0 || b.inner_blks[1] != kPanel ||
        b.inner_idxs[1] != 1 || b.strides[0] != kKBlock * kPanel || b.strides[1] != k_padded * kPanel)
      return std::nullopt;
    g.panel_stride_ = b.strides[1];
  }
  if (weights.data.offset0 != 0) return std::nullopt;
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
      if (s.alg != dnnl::algorithm::binary_add || !dense_row(src1, n)) return std::nullopt;
      s.add = true;
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
  parallel_range(panels, k_ * n_, 1, [&](int64_t p0, int64_t p1) {
    const D d;
    HWY_ALIGN float acc[kPanel];
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t c0 = p * kPanel, cols = std::min(kPanel, n_ - c0);
      if (columns_) columns_dot(x, k_, packed + c0 * k_, cols, acc);
      else panel_dot(x, k_, packed + p * panel_stride_, acc);
      for (int64_t j = 0; j < cols; j += static_cast<int64_t>(kLanes)) {
        const auto m = hn::FirstN(d, static_cast<size_t>(std::min<int64_t>(kLanes, cols - j)));
        const int64_t c = c0 + j;
        V v = hn::Load(d, acc + j);
        if (bias_) v = hn::Add(v, hn::MaskedLoad(m, d, bias + c));
        size_t next_binary = 0;
        for (const Step& s : steps_) v = s.add ? hn::Add(v, hn::MaskedLoad(m, d, binary[next_binary++] + c)) : eltwise(s, v);
        hn::BlendedStore(v, m, d, y + c);
      }
    }
  });
}

}  // namespace fusor::cpu
