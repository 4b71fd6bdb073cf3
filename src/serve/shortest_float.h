// The shortest text that reads back to a float32, as std::to_chars(first, last, float) writes it
// (the same characters), for JSON responses: MiniLM's last_hidden_state is ~26k floats a request,
// and libstdc++'s to_chars took ~40 ns a float, ~5% of a saturated JSON server's CPU.
//
// How: x = m 2^e (m of 24 bits). Scaled by 10^s, with s chosen so that x's rounding interval is
// at least 7.5 units wide, x and both ends of the interval are exact 64-bit integers shifted right
// by t bits, for every normal x with -49 <= e <= 0 (about 1.5e-8 to 1.7e7: where a network's
// outputs live). The shortest decimal is then the multiple of the largest power of ten inside the
// interval, the one nearest x (ties to even), as the C++ standard asks. Every other float (zero,
// subnormals, the far exponents) goes to std::to_chars. bench/shortest_float checks every float
// of the fast range against std::to_chars, character for character.
#pragma once
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace fusor::serve {

namespace shortest_float_detail {

// What shortest_float may write past p: the longest text ("-1.17549435e-38", 15 characters) and
// the tail of its fixed-size copies.
inline constexpr size_t kRoom = 48;

inline constexpr uint64_t kPow5[17] = {1ull,           5ull,           25ull,           125ull,          625ull,
                                       3125ull,        15625ull,       78125ull,        390625ull,       1953125ull,
                                       9765625ull,     48828125ull,    244140625ull,    1220703125ull,   6103515625ull,
                                       30517578125ull, 152587890625ull};

// The 8 digits of v (< 10^8) as ASCII bytes, the most significant first in memory order
// (little-endian), computed in one register: two 4-digit halves in 32-bit lanes, split into
// 2-digit pairs in 16-bit lanes (/100 as * 10486 >> 20, exact below 10^4), then into digits in
// bytes (/10 as * 103 >> 10, exact below 100). In a register, not in a buffer read back: bytes
// stored one by one and reloaded as a word stall the load until the stores retire.
inline uint64_t eight_digits(uint32_t v) {
  uint64_t x = (v / 10000) | uint64_t{v % 10000} << 32;
  const uint64_t hundreds = ((x * 10486) >> 20) & 0x0000007f0000007full;
  x = hundreds | (x - 100 * hundreds) << 16;
  const uint64_t tens = ((x * 103) >> 10) & 0x000f000f000f000full;
  x = tens | (x - 10 * tens) << 8;
  return x | 0x3030303030303030ull;
}

inline int digit_count(uint32_t d) {
  return 1 + (d >= 10) + (d >= 100) + (d >= 1000) + (d >= 10000) + (d >= 100000) + (d >= 1000000) +
         (d >= 10000000) + (d >= 100000000);
}

// The n digits of d (< 10^9) as ASCII bytes in one 128-bit register, the first in the lowest
// byte: every length is the same shifts and stores, with no branch on it to mispredict.
struct Digits {
  unsigned __int128 all;
  int n;
};

inline Digits digits_of(uint32_t d) {
  const int n = digit_count(d);
  const unsigned __int128 nine =
      static_cast<unsigned __int128>(eight_digits(d % 100000000)) << 8 | static_cast<unsigned>('0' + d / 100000000);
  return {nine >> (8 * (9 - n)), n};
}

// Stores the digits from index `from` on at dst, as 16 bytes (zeros after the last digit).
inline void store_digits(char* dst, const Digits& g, int from) {
  const unsigned __int128 rest = g.all >> (8 * from);
  std::memcpy(dst, &rest, 16);
}

// d * 10^p (d without trailing zeros) as printf's %f or %e would print it, whichever is shorter
// (%f on a tie), as std::to_chars does. Digits go out in 16-byte stores: the caller leaves room
// for kRoom characters.
inline char* format(char* p, uint32_t d, int pow10) {
  const Digits g = digits_of(d);
  const int n = g.n;
  const int x = pow10 + n - 1;  // the scientific exponent
  const int ax = x < 0 ? -x : x;
  const int sci_len = n + (n > 1) + 2 + (ax >= 100 ? 3 : 2);
  const int fixed_len = pow10 >= 0 ? n + pow10 : x >= 0 ? n + 1 : 1 - pow10 + 1;
  if (fixed_len <= sci_len) {
    if (pow10 >= 0) {  // an integer: the digits, then zeros
      store_digits(p, g, 0);
      std::memset(p + n, '0', static_cast<size_t>(pow10));
      return p + n + pow10;
    }
    if (x >= 0) {  // digits on both sides of the point
      const int whole = x + 1;
      store_digits(p, g, 0);
      p[whole] = '.';
      store_digits(p + whole + 1, g, whole);
      return p + n + 1;
    }
    const int zeros = -x - 1;  // "0." then zeros (fewer than 7: %e is shorter past that), the digits
    std::memcpy(p, "0.000000", 8);
    store_digits(p + 2 + zeros, g, 0);
    return p + 2 + zeros + n;
  }
  p[0] = static_cast<char>(g.all & 0xff);
  int at = 1;
  if (n > 1) {
    p[1] = '.';
    store_digits(p + 2, g, 1);
    at = n + 1;
  }
  p[at++] = 'e';
  p[at++] = x < 0 ? '-' : '+';
  if (ax >= 100) p[at++] = static_cast<char>('0' + ax / 100);
  p[at++] = static_cast<char>('0' + ax / 10 % 10);
  p[at++] = static_cast<char>('0' + ax % 10);
  return p + at;
}

}  // namespace shortest_float_detail

// Writes v's shortest text at p and returns its end; p must have room for kRoom characters.
inline char* shortest_float(char* p, float v) {
  namespace sf = shortest_float_detail;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const uint32_t biased = bits >> 23 & 0xff;
  const int e = static_cast<int>(biased) - 150;  // v = m 2^e for a normal v
  if (biased == 0 || biased == 0xff || e < -49 || e > 0) return std::to_chars(p, p + sf::kRoom, v).ptr;
  if (bits >> 31) *p++ = '-';
  const uint64_t m = (bits & 0x7fffffu) | 0x800000u;
  // In units of 2^(e-2): x is 4m, its interval's ends are halfway to the neighbours (the one
  // below is half as far at a power of two). The ends belong to it when m is even (reading
  // rounds half to even).
  const uint64_t mv = 4 * m, mp = mv + 2, mm = mv - ((m == 0x800000u && biased > 1) ? 1 : 2);
  const bool ends_inside = (m & 1) == 0;
  // Scale by 10^s: the interval, 3-4 units of 2^(e-2), spans 10 * 0.75 units or more.
  const int s = (-e * 78913 + (1 << 18) - 1) / (1 << 18) + 1;  // ceil(-e log10 2) + 1, 1..16
  const int t = 2 - e - s;                                      // the binary point, 1..35 bits up
  const uint64_t mask = (uint64_t{1} << t) - 1, pow5 = sf::kPow5[s];
  const uint64_t v_scaled = mv * pow5, hi_scaled = mp * pow5, lo_scaled = mm * pow5;
  uint64_t hi = hi_scaled >> t, lo_minus_1 = lo_scaled >> t;
  const uint64_t vr = v_scaled >> t;
  if ((hi_scaled & mask) == 0 && !ends_inside) --hi;  // the upper end itself is not allowed
  if ((lo_scaled & mask) == 0 && ends_inside) --lo_minus_1;  // the lower end itself is
  // Drop the most digits that leave a multiple of their power of ten inside the interval,
  // keeping x's last dropped digit and whether everything below it (and x's fraction) was zero.
  // Then the multiple nearest x, ties to even, moved into the interval.
  const uint64_t frac = v_scaled & mask;
  uint64_t d = vr, last = 0;
  bool below_zero = frac == 0;
  int dropped = 0;
  while (hi / 10 > lo_minus_1 / 10) {
    below_zero = below_zero && last == 0;
    last = d % 10;
    d /= 10, hi /= 10, lo_minus_1 /= 10;
    ++dropped;
  }
  bool up, tie;
  if (dropped == 0) {
    const uint64_t half = uint64_t{1} << (t - 1);
    up = frac > half;
    tie = frac == half;
  } else {
    up = last > 5 || (last == 5 && !below_zero);
    tie = last == 5 && below_zero;
  }
  d += up || (tie && (d & 1));
  d = d <= lo_minus_1 ? lo_minus_1 + 1 : d > hi ? hi : d;
  return sf::format(p, static_cast<uint32_t>(d), dropped - s);
}

}  // namespace fusor::serve
