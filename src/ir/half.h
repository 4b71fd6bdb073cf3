// float16 (IEEE binary16) and bfloat16 bit patterns to and from float. fusor stores these two
// types but computes them in float32 (see passes/storage_types.h). Conversions to the 16-bit
// types round to nearest, ties to even; inf and NaN are kept (NaN stays quiet) and magnitudes
// past the largest finite value become inf. They take a double, so that a double rounds once.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace fusor {
namespace half_detail {

// Rounds |x| (finite, not NaN) to a 16-bit pattern without sign for a format with `mant` stored
// mantissa bits and exponent bias `bias`. Scaling by a power of two is exact, so the one
// rounding is std::nearbyint's (ties to even in the default rounding mode). A mantissa that
// rounds up to the next power of two carries into the exponent by the addition, and a subnormal
// that rounds up to the smallest normal lands on its pattern the same way.
inline uint16_t round_magnitude(double a, int mant, int bias) {
  const int min_exp = 1 - bias;  // exponent of the smallest normal
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  --e;                // a = m' * 2^e, m' in [1, 2)
  const uint32_t inf = ((2u * static_cast<uint32_t>(bias) + 1u) << mant);
  if (a == 0) return 0;
  if (e > bias) return static_cast<uint16_t>(inf);
  if (e < min_exp) {  // subnormal: units of 2^(min_exp - mant)
    double q = std::nearbyint(std::ldexp(a, mant - min_exp));
    return static_cast<uint16_t>(q);
  }
  double q = std::nearbyint(std::ldexp(a, mant - e));  // in [2^mant, 2^(mant+1)]
  uint32_t bits = (static_cast<uint32_t>(e + bias) << mant) + (static_cast<uint32_t>(q) - (1u << mant));
  return static_cast<uint16_t>(bits >= inf ? inf : bits);
}

inline uint16_t from_double(double x, int mant, int bias) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const uint16_t inf = static_cast<uint16_t>((2u * static_cast<uint32_t>(bias) + 1u) << mant);
  if (std::isnan(x)) return static_cast<uint16_t>(sign | inf | (1u << (mant - 1)));
  if (std::isinf(x)) return static_cast<uint16_t>(sign | inf);
  return static_cast<uint16_t>(sign | round_magnitude(std::fabs(x), mant, bias));
}

}  // namespace half_detail

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    float m = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -m : m;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_half(double x) { return half_detail::from_double(x, 10, 15); }

inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bfloat16(double x) { return half_detail::from_double(x, 7, 127); }

}  // namespace fusor
