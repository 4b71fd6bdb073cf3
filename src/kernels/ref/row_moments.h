// Mean and inverse standard deviation of one contiguous row, in double with two passes (more
// precise than any stash_type asks): shared by LayerNormalization, GroupNormalization and
// InstanceNormalization.
#pragma once
#include <cmath>
#include <cstdint>

namespace fusor::ref {

struct RowMoments {
  double mean = 0;
  double inv_std = 0;  // 1 / sqrt(variance + eps)
};

// An empty row has mean 0 and variance 0.
template <class T>
RowMoments row_moments(const T* x, int64_t len, double eps) {
  double sum = 0;
  for (int64_t i = 0; i < len; ++i) sum += static_cast<double>(x[i]);
  const double mean = len ? sum / static_cast<double>(len) : 0.0;
  double sq = 0;
  for (int64_t i = 0; i < len; ++i) {
    const double c = static_cast<double>(x[i]) - mean;
    sq += c * c;
  }
  return {mean, 1.0 / std::sqrt((len ? sq / static_cast<double>(len) : 0.0) + eps)};
}

}  // namespace fusor::ref
