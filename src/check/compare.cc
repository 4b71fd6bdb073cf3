#include "check/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace fusor {

Tolerance tolerance_for(PrecisionCheck mode) {
  if (mode == PrecisionCheck::Relaxed) return {1e-4, 1e-3, 16384};
  return {};
}

Tolerance twin_tolerance() { return {1e-5, 1e-4, std::numeric_limits<int64_t>::max()}; }

double allowed_difference(const Tolerance& tol, double expected) { return tol.atol + tol.rtol * std::abs(expected); }

int64_t ulp_distance(float a, float b) {
  // Map the floats onto a monotonic integer line (negative floats mirrored below zero).
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? static_cast<int64_t>(std::numeric_limits<int32_t>::min()) - i : static_cast<int64_t>(i);
  };
  int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

Difference compare_tensors(const Tensor& actual, const Tensor& expected, const Tolerance& tol) {
  Difference d;
  if (actual.dtype() != expected.dtype() || actual.dims() != expected.dims()) {
    d.shape_mismatch = true;
    d.within = false;
    return d;
  }
  const int64_t n = actual.numel();
  if (tol.quantization_steps > 0 && (actual.dtype() == DType::UInt8 || actual.dtype() == DType::Int8)) {
    int64_t stepped = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double diff = std::abs(actual.scalar_as_double(i) - expected.scalar_as_double(i));
      if (diff > d.max_abs || d.worst_index < 0) {
        d.max_abs = diff;
        d.worst_index = i;
      }
      if (diff > static_cast<double>(tol.quantization_steps) && d.failing++ == 0) d.first_failing = i;
      if (diff > 0) ++stepped;
    }
    // A tie is rare; a step everywhere is a wrong zero point or scale, not rounding.
    d.within = d.failing == 0 && stepped <= std::max<int64_t>(1, n / kMaxSteppedPer);
    return d;
  }
  if (actual.dtype() != DType::Float32) {
    const size_t width = actual.nbytes() / static_cast<size_t>(std::max<int64_t>(n, 1));
    const auto* a = static_cast<const unsigned char*>(actual.raw());
    const auto* b = static_cast<const unsigned char*>(expected.raw());
    for (int64_t i = 0; i < n; ++i)
      if (std::memcmp(a + i * width, b + i * width, width) != 0 && d.failing++ == 0) d.first_failing = i;
    d.within = d.failing == 0;
    d.max_abs = d.within ? 0.0 : 1.0;
    return d;
  }
  const float* a = actual.data<float>();
  const float* b = expected.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    if (!fa || !fb) {
      // Same non-finite value on both sides (both NaN, or the same infinity) is agreement.
      bool same = (std::isnan(a[i]) && std::isnan(b[i])) || (!fa && !fb && a[i] == b[i]);
      if (!same) {
        d.nonfinite_mismatch = true;
        d.within = false;
        if (d.worst_index < 0) d.worst_index = i;
        if (d.failing++ == 0) d.first_failing = i;
      }
      continue;
    }
    const double diff = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    const int64_t ulp = ulp_distance(a[i], b[i]);
    if (diff > d.max_abs || d.worst_index < 0) {
      d.max_abs = diff;
      d.worst_index = i;
    }
    if (b[i] != 0) d.max_rel = std::max(d.max_rel, diff / std::abs(static_cast<double>(b[i])));
    if (diff > tol.atol) d.max_ulp = std::max(d.max_ulp, ulp);
    if (diff > allowed_difference(tol, b[i]) || (diff > tol.atol && ulp > tol.max_ulp)) {
      d.within = false;
      if (d.failing++ == 0) d.first_failing = i;
    }
  }
  return d;
}

}  // namespace fusor
