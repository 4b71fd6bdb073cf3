// Where a GEMM's columns go when one GEMM computes several projections side by side
// (merge_projections' Q, K and V): each output takes the columns from its `begin` to the next
// one's, as dense rows `ld` apart. fusor's own GEMM loops (panel_gemm.h, packed_rows_gemm.h)
// store into them directly, so no wide result is copied apart afterwards.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

namespace fusor::cpu {

struct ColumnSplit {
  int64_t begin = 0;
  float* dst = nullptr;
  int64_t ld = 0;
};

// The columns of split o, of a result `n` wide.
inline int64_t split_columns(std::span<const ColumnSplit> splits, size_t o, int64_t n) {
  return (o + 1 < splits.size() ? splits[o + 1].begin : n) - splits[o].begin;
}

// The split that column c goes to.
inline size_t split_of(std::span<const ColumnSplit> splits, int64_t c) {
  size_t o = splits.size() - 1;
  while (splits[o].begin > c) --o;
  return o;
}

// Rows [from, to) of every split set to zero: a packed plan's filler rows, not computed.
inline void zero_rows(std::span<const ColumnSplit> splits, int64_t n, int64_t from, int64_t to) {
  for (size_t o = 0; o < splits.size(); ++o)
    for (int64_t r = from; r < to; ++r)
      std::memset(splits[o].dst + r * splits[o].ld, 0, static_cast<size_t>(split_columns(splits, o, n)) * sizeof(float));
}

// Copies a tile (rows [r0, r1) of the result, columns [c0, c0 + cols), rows `ld` apart) into
// the splits it spans.
inline void scatter_tile(std::span<const ColumnSplit> splits, int64_t n, const float* tile, int64_t ld, int64_t r0,
                         int64_t r1, int64_t c0, int64_t cols) {
  for (size_t o = split_of(splits, c0); o < splits.size() && splits[o].begin < c0 + cols; ++o) {
    const int64_t from = std::max(c0, splits[o].begin);
    const int64_t to = std::min(c0 + cols, splits[o].begin + split_columns(splits, o, n));
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(splits[o].dst + r * splits[o].ld + (from - splits[o].begin), tile + (r - r0) * ld + (from - c0),
                  static_cast<size_t>(to - from) * sizeof(float));
  }
}

}  // namespace fusor::cpu
