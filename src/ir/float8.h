// The four float8 formats of ONNX (storage only: fusor computes with their float values).
// Each is 1 sign bit, E exponent bits and M mantissa bits; they differ in bias and specials:
//   E4M3FN   bias 7,  no inf, NaN = S.1111.111, max 448
//   E4M3FNUZ bias 8,  no inf, no -0, NaN = 0x80, max 240
//   E5M2     bias 15, inf = S.11111.00, NaN = S.11111.xx (xx != 0), max 57344
//   E5M2FNUZ bias 16, no inf, no -0, NaN = 0x80, max 57344
// Conversions to float8 round to nearest, ties to even. A magnitude past the largest finite
// value (inf included) becomes +-max when `saturate`, else NaN (inf for E5M2, which has one).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "fusor/dtype.h"

namespace fusor {

inline bool is_float8(DType t) {
  return t == DType::Float8E4M3FN || t == DType::Float8E4M3FNUZ || t == DType::Float8E5M2 ||
         t == DType::Float8E5M2FNUZ;
}

struct Float8Format {
  int mant;         // stored mantissa bits
  int bias;         // exponent bias
  uint8_t max;      // bit pattern of the largest finite magnitude
  bool uz;          // no negative zero; 0x80 is the one NaN
  bool has_inf;     // E5M2 only
};

// `t` must be one of the float8 types.
inline Float8Format float8_format(DType t) {
  switch (t) {
    case DType::Float8E4M3FN: return {3, 7, 0x7E, false, false};
    case DType::Float8E4M3FNUZ: return {3, 8, 0x7F, true, false};
    case DType::Float8E5M2: return {2, 15, 0x7B, false, true};
    default: return {2, 16, 0x7F, true, false};  // Float8E5M2FNUZ
  }
}

inline float float8_to_float(uint8_t bits, const Float8Format& f) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const bool neg = bits & 0x80;
  const int mag = bits & 0x7F;
  if (f.uz && bits == 0x80) return nan;
  if (!f.uz && !f.has_inf && mag == 0x7F) return neg ? -nan : nan;
  const int exp = mag >> f.mant, m = mag & ((1 << f.mant) - 1);
  if (f.has_inf && exp == (1 << (7 - f.mant)) - 1) {
    if (m != 0) return neg ? -nan : nan;
    return neg ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  // Subnormals (exp 0) have no implicit 1 and the exponent of the smallest normal.
  const float v = exp == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.mant)
                           : std::ldexp(static_cast<float>(m + (1 << f.mant)), exp - f.bias - f.mant);
  return neg ? -v : v;
}

inline uint8_t float_to_float8(float x, const Float8Format& f, bool saturate) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const uint8_t nan = f.uz ? 0x80 : static_cast<uint8_t>(sign | 0x7F);
  const uint8_t overflow = saturate ? static_cast<uint8_t>(sign | f.max)
                           : f.has_inf ? static_cast<uint8_t>(sign | 0x7C) : nan;
  if (std::isnan(x)) return nan;
  if (std::isinf(x)) return overflow;
  const double a = std::fabs(static_cast<double>(x));
  if (a == 0) return f.uz ? 0 : sign;
  int e;
  std::frexp(a, &e);
  --e;  // a = m * 2^e with m in [1, 2)
  const int min_exp = 1 - f.bias;  // exponent of the smallest normal
  uint32_t bits;
  if (e < min_exp) {
    // Subnormal, in units of the smallest subnormal; rounding up to 1 << mant lands exactly on
    // the smallest normal's pattern.
    bits = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, f.mant - min_exp)));
  } else {
    if (e + f.bias > 0x7F >> f.mant) return overflow;
    // q in [2^mant, 2^(mant+1)]: a mantissa that rounds up to 2^(mant+1) carries into the exponent.
    const auto q = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, f.mant - e)));
    bits = (static_cast<uint32_t>(e + f.bias) << f.mant) + (q - (1u << f.mant));
  }
  if (bits > f.max) return overflow;
  if (bits == 0) return f.uz ? 0 : sign;
  return static_cast<uint8_t>(sign | bits);
}

inline float float8_to_float(uint8_t bits, DType t) { return float8_to_float(bits, float8_format(t)); }
inline uint8_t float_to_float8(float x, DType t, bool saturate) {
  return float_to_float8(x, float8_format(t), saturate);
}

}  // namespace fusor
