#include "kernels/cpu/packed_gemv.h"

#include <algorithm>

#include "kernels/cpu/brgemm_panels.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using simd::D;
using simd::V;
namespace hn = simd::hn;

constexpr int64_t kPanel = brgemm_panels::kCols;
constexpr size_t kLanes = HWY_LANES(float);
static_assert(kPanel % kLanes == 0);
constexpr size_t kVecs = kPanel / kLanes;

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

bool env_on() {
  static const bool on = env_switch_on("FUSOR_PACKED_GEMV");  // =0: oneDNN runs one-row GEMMs too
  return on;
}

}  // namespace

std::optional<PackedGemv> PackedGemv::make(const memory::desc& src, const memory::desc& weights,
                                           const memory::desc& dst, bool has_bias, const dnnl::post_ops& post_ops) {
  if (!env_on() || src.data.ndims != 2 || weights.data.ndims != 2) return std::nullopt;
  const int64_t k = weights.dims()[0], n = weights.dims()[1];
  if (!dense_rows(src, 1, k) || !dense_rows(dst, 1, n) ||
      weights.data_type() != memory::data_type::f32 || weights.data.format_kind != dnnl_blocked)
    return std::nullopt;
  const auto& b = weights.data.format_desc.blocking;
  PackedGemv g;
  if (b.inner_nblks == 0 && b.strides[0] == 1 && b.strides[1] == k) {
    g.columns_ = true;  // "ba"
  } else if (const auto stride = brgemm_panels::panel_stride(weights)) {
    g.panel_stride_ = *stride;
  } else {
    return std::nullopt;
  }
  if (weights.data.offset0 != 0) return std::nullopt;
  g.k_ = k;
  g.n_ = n;
  auto epilogue = GemmEpilogue::make(post_ops, 1, n, has_bias);
  if (!epilogue) return std::nullopt;
  g.epilogue_ = std::move(*epilogue);
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
        const auto mask = hn::FirstN(d, static_cast<size_t>(std::min<int64_t>(kLanes, cols - j)));
        const int64_t c = c0 + j;
        hn::BlendedStore(epilogue_.apply(hn::LoadU(d, acc + j), 0, c, mask, bias, binary), mask, d, y + c);
      }
    }
  });
}

}  // namespace fusor::cpu
