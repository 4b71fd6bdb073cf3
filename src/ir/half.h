// float16 (IEEE binary16) and bfloat16 bit patterns to and from float. fusor stores these two
// types but computes them in float32 (see passes/storage_types.h). Conversions to the 16-bit
// types round to nearest, ties to even; inf and NaN are kept (NaN stays quiet) and magnitudes
// past the largest finite value become inf. A double rounds once (not through float); a float
// takes a faster integer path with the same results (a test compares the two).
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

inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x47800000u) return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00 : 0x7c00));  // >= 2^16
  if (a < 0x38800000u) {
    // Below 2^-14, float16 counts units of 2^-24: the ulp of float at 0.5. Adding 0.5 makes the
    // float addition round |f| to a multiple of it; the bits above 0.5's are that multiple.
    const float v = std::bit_cast<float>(a) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
  }
  // Rebias the exponent from 127 to 15, then drop 13 mantissa bits rounding to nearest even: add
  // just under half, plus one when the kept part is odd. A carry moves into the exponent, up to
  // inf for [65520, 65536).
  uint32_t r = a - (static_cast<uint32_t>(127 - 15) << 23);
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bfloat16(double x) { return half_detail::from_double(x, 7, 127); }

// bfloat16 is float's upper half: round the lower half away, to nearest even (a carry reaches inf
// past the largest finite value).
inline uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN stays quiet
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace fusor
