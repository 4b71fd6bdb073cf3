// The comparison rules of the precision gate, explicit per mode (docs/check.md has the table).
//
//   strict  (fp32): |a - b| <= 1e-5 + 1.3e-6 * |b|   (torch.testing's float32 defaults)
//                   and, where |a - b| > atol, at most 64 ULP apart
//   relaxed (fp32): |a - b| <= 1e-4 + 1e-3 * |b|, at most 16384 ULP apart
//   twin    (fp32): |a - b| <= 1e-5 + 1e-4 * |b|, no ULP bound: the unit tests' rule for a fast
//                   kernel or plan against the reference kernels, which accumulate in float64
//                   where fast kernels sum float32 in another order (not a gate mode)
//
// A NaN or an Inf where the other side has none (or another one) always fails. Integer and bool
// tensors must be equal, except int8/uint8 ones within Tolerance::quantization_steps (a fused QDQ
// unit's output: one step) where at most one element in kMaxSteppedPer differs at all: rounding
// flips a tie here and there, a wrong zero point or scale moves them all.
#pragma once
#include <cstdint>
#include <string>

#include "fusor/check.h"
#include "fusor/tensor.h"

namespace fusor {

// Tolerance, tolerance_for and Difference are public: fusor/check.h.
Tolerance twin_tolerance();

// Within quantization steps, at most one element in this many may differ (ties are rare).
inline constexpr int64_t kMaxSteppedPer = 100;

// The |a - b| allowed where the expected value is `expected` (the ULP bound aside).
double allowed_difference(const Tolerance& tol, double expected);

Difference compare_tensors(const Tensor& actual, const Tensor& expected, const Tolerance& tol);

// ULP distance between two finite floats (0 when equal, huge across signs).
int64_t ulp_distance(float a, float b);

}  // namespace fusor
