// The layout oneDNN 2.6's brgemm packs f32 matmul weights into on AVX-512 ("BA16a64b"): panels of
// 64 columns, each K rows (K padded to a multiple of 16) of 64 floats, panel after panel. fusor's
// few-row loops (packed_gemv.h, packed_rows_gemm.h) read it in place, so the weights are not
// packed twice.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>

namespace fusor::cpu::brgemm_panels {

constexpr int64_t kCols = 64;    // columns per panel
constexpr int64_t kKBlock = 16;  // K rows are padded to a multiple of this

// Floats from one panel to the next when `weights` (K x N, f32) is this layout at offset 0.
inline std::optional<int64_t> panel_stride(const dnnl::memory::desc& weights) {
  if (weights.data.ndims != 2 || weights.data_type() != dnnl::memory::data_type::f32 ||
      weights.data.format_kind != dnnl_blocked || weights.data.offset0 != 0)
    return std::nullopt;
  const auto& b = weights.data.format_desc.blocking;
  const int64_t k_padded = weights.data.padded_dims[0];
  // Inner blocks of 16 K rows x 64 columns, K blocks innermost of the outer dims.
  if (b.inner_nblks != 2 || b.inner_blks[0] != kKBlock || b.inner_idxs[0] != 0 || b.inner_blks[1] != kCols ||
      b.inner_idxs[1] != 1 || b.strides[0] != kKBlock * kCols || b.strides[1] != k_padded * kCols)
    return std::nullopt;
  return b.strides[1];
}

}  // namespace fusor::cpu::brgemm_panels
