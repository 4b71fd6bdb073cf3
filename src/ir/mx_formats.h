// The element and scale types of the OCP microscaling (MX) formats, storage only (fusor computes
// with their float values), as ONNX defines them:
//   float4e2m1  1 sign, 2 exponent (bias 1) and 1 mantissa bit: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6},
//               no inf or NaN. Conversions round to nearest, ties to even, and saturate at 6
//               (inf too); NaN becomes -0, as ml_dtypes (ONNX's reference) converts it.
//   float8e8m0  an exponent alone: 2^(e - 127), e = 0xFF is NaN; no sign and no zero. A float
//               keeps its float32 exponent, rounded by `round_mode` ("up": any mantissa bit
//               rounds up; "down": truncates; "nearest": a mantissa of 1.5 or more rounds up),
//               not past 2^127 when saturating (else to NaN); inf and NaN become NaN.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace fusor {

inline float float4e2m1_to_float(uint8_t code) {
  static constexpr float kMagnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = kMagnitudes[code & 0x7];
  return code & 0x8 ? -v : v;
}

inline uint8_t float_to_float4e2m1(float x) {
  if (std::isnan(x)) return 0x8;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0;
  const float a = std::fabs(x);
  if (a >= 6.0f) return static_cast<uint8_t>(sign | 0x7);  // saturates, inf too
  uint8_t best = 0;
  for (uint8_t c = 1; c < 8; ++c) {
    const float d = std::fabs(a - float4e2m1_to_float(c)), best_d = std::fabs(a - float4e2m1_to_float(best));
    if (d < best_d || (d == best_d && c % 2 == 0)) best = c;  // a tie goes to the even code
  }
  return static_cast<uint8_t>(sign | best);
}

inline float float8e8m0_to_float(uint8_t e) {
  return e == 0xFF ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, static_cast<int>(e) - 127);
}

enum class E8M0Rounding { Up, Down, Nearest };

inline uint8_t float_to_float8e8m0(float x, E8M0Rounding rounding, bool saturate) {
  const auto bits = std::bit_cast<uint32_t>(x);
  uint32_t e = (bits >> 23) & 0xFF;
  if (e == 0xFF) return 0xFF;
  const uint32_t mantissa = bits & 0x7FFFFF;
  bool up = false;
  if (rounding == E8M0Rounding::Up) up = mantissa != 0;
  if (rounding == E8M0Rounding::Nearest) up = (mantissa & 0x400000) && (e > 0 || (mantissa & 0x3FFFFF));
  if (up && !(saturate && e == 0xFE)) ++e;
  return static_cast<uint8_t>(e);
}

}  // namespace fusor
