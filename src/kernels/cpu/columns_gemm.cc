#include "kernels/cpu/columns_gemm.h"

#include <algorithm>

#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

constexpr int64_t kLanes = static_cast<int64_t>(HWY_LANES(float));
constexpr int kMaxVectors = 2;  // rows of x per pass, in vectors: 16 on AVX2
constexpr int kAccumulators = 12;  // of 16 registers on AVX2: the rest hold x and one weight

// NB columns by RV vectors of rows: out[(j * RV + v) * kLanes + l] = row v * kLanes + l of x
// times column j. Per k: RV loads of x, NB broadcasts of a weight, NB * RV FMAs.
template <int NB, int RV>
void outer_block(const float* xt, int64_t padded, int64_t k, const float* w, float* out) {
  const D d;
  V a[NB][RV];
  for (int j = 0; j < NB; ++j)
    for (int v = 0; v < RV; ++v) a[j][v] = hn::Zero(d);
  for (int64_t i = 0; i < k; ++i) {
    V xv[RV];
    for (int v = 0; v < RV; ++v) xv[v] = hn::LoadU(d, xt + i * padded + v * kLanes);
    for (int j = 0; j < NB; ++j) {
      const V wj = hn::Set(d, w[j * k + i]);
      for (int v = 0; v < RV; ++v) a[j][v] = hn::MulAdd(xv[v], wj, a[j][v]);
    }
  }
  for (int j = 0; j < NB; ++j)
    for (int v = 0; v < RV; ++v) hn::StoreU(a[j][v], d, out + (j * RV + v) * kLanes);
}

// Every column of [0, cols) for RV vectors of rows: blocks of NB columns, then one at a time.
template <int RV>
void columns_pass(const float* xt, int64_t m, int64_t padded, int64_t k, const float* w, int64_t cols, float* acc,
                  int64_t acc_stride) {
  constexpr int kBlock = kAccumulators / RV;
  HWY_ALIGN float out[kBlock * RV * kLanes];
  auto scatter = [&](int64_t c0, int nb) {
    for (int j = 0; j < nb; ++j)
      for (int64_t r = 0; r < m; ++r) acc[r * acc_stride + c0 + j] = out[j * RV * kLanes + r];
  };
  int64_t c = 0;
  for (; c + kBlock <= cols; c += kBlock) {
    outer_block<kBlock, RV>(xt, padded, k, w + c * k, out);
    scatter(c, kBlock);
  }
  for (; c < cols; ++c) {
    outer_block<1, RV>(xt, padded, k, w + c * k, out);
    scatter(c, 1);
  }
}

}  // namespace

int64_t columns_gemm_max_rows() { return kMaxVectors * kLanes; }

int64_t transpose_rows(const float* x, int64_t m, int64_t k, std::span<float> xt) {
  const int64_t padded = (m + kLanes - 1) / kLanes * kLanes;
  for (int64_t i = 0; i < k; ++i) {
    float* col = xt.data() + i * padded;
    for (int64_t r = 0; r < m; ++r) col[r] = x[r * k + i];
    std::fill(col + m, col + padded, 0.f);
  }
  return padded;
}

void columns_gemm(const float* xt, int64_t m, int64_t padded, int64_t k, const float* w, int64_t cols, float* acc,
                  int64_t acc_stride) {
  switch (padded / kLanes) {
    case 1: return columns_pass<1>(xt, m, padded, k, w, cols, acc, acc_stride);
    default: return columns_pass<kMaxVectors>(xt, m, padded, k, w, cols, acc, acc_stride);
  }
}

}  // namespace fusor::cpu
