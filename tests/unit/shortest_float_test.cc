// serve::shortest_float writes what std::to_chars writes for a float32, character for character.
// bench/shortest_float checks every float; here, a spread of every exponent and the cases the
// algorithm treats apart.
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "serve/shortest_float.h"

namespace fusor::serve {
namespace {

std::string ours(float v) {
  char buf[64];
  return std::string(buf, shortest_float(buf, v));
}

std::string theirs(float v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

void expect_same(uint32_t bits) {
  const float v = std::bit_cast<float>(bits);
  if (!std::isfinite(v)) return;
  ASSERT_EQ(ours(v), theirs(v)) << std::hex << "bits 0x" << bits;
}

// Every 65537th bit pattern: each exponent, both signs, a few hundred mantissas each.
TEST(ShortestFloat, MatchesToCharsAcrossEveryExponent) {
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 65537) expect_same(static_cast<uint32_t>(bits));
}

// The ends of each binade: a power of two (its interval is narrower below), its neighbours, and
// the largest mantissa; zero, subnormals and the fast range's first and last exponents.
TEST(ShortestFloat, MatchesToCharsAtTheEdges) {
  for (uint32_t biased = 0; biased < 255; ++biased)
    for (uint32_t mantissa : {0u, 1u, 2u, 3u, 0x400000u, 0x7ffffeu, 0x7fffffu})
      for (uint32_t sign : {0u, 0x80000000u}) expect_same(sign | biased << 23 | mantissa);
}

// Values a network writes: small integers, exact binary fractions (ties in the last digit),
// decimals and their neighbours.
TEST(ShortestFloat, MatchesToCharsOnRoundValues) {
  std::vector<float> values;
  for (int i = 0; i <= 1000; ++i) values.push_back(static_cast<float>(i));
  for (int i = 1; i <= 4096; ++i) values.push_back(static_cast<float>(i) / 4096.f);
  for (int k = -8; k <= 7; ++k)
    for (int i = 1; i <= 99; ++i) values.push_back(static_cast<float>(i * std::pow(10.0, k)));
  for (float v : values)
    for (float w : {v, std::nextafter(v, 0.f), std::nextafter(v, 1e30f), -v}) expect_same(std::bit_cast<uint32_t>(w));
}

TEST(ShortestFloat, WritesWhatTheStandardAsks) {
  EXPECT_EQ(ours(0.1f), "0.1");
  EXPECT_EQ(ours(-1.5f), "-1.5");
  EXPECT_EQ(ours(100.f), "100");
  EXPECT_EQ(ours(1234567.f), "1234567");
  EXPECT_EQ(ours(0.001f), "0.001");
  EXPECT_EQ(ours(1e-5f), "1e-05");  // shorter than 0.00001
  EXPECT_EQ(ours(3.4028235e38f), "3.4028235e+38");
  EXPECT_EQ(ours(16777216.f), "16777216");
}

}  // namespace
}  // namespace fusor::serve
