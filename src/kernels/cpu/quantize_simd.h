// QuantizeLinear's float32 arithmetic on one vector, shared by the QuantizeLinear kernel and the
// fused elementwise program's Quantize instruction, so both make the reference's integers.
#pragma once
#include "kernels/cpu/simd.h"

namespace fusor::cpu::simd {

// round_half_even(x / scale) + zero_point, clamped to [lo, hi], NaN to 0; an integer-valued float.
inline V quantize(V x, V scale, V zero_point, V lo, V hi) {
  const V v = hn::Add(hn::Round(hn::Div(x, scale)), zero_point);
  return hn::IfThenElseZero(hn::Eq(v, v), hn::Min(hn::Max(v, lo), hi));
}

}  // namespace fusor::cpu::simd
