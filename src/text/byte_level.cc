#include "text/byte_level.h"

#include <array>

namespace fusor::text {
namespace {

struct Alphabet {
  std::array<char32_t, 256> char_of{};
  std::array<int, 512> byte_of{};  // stand-ins are all below U+0200; -1 for no byte

  Alphabet() {
    byte_of.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char_of[b] = printable ? char32_t(b) : next++;
      byte_of[char_of[b]] = b;
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

void append_utf8(std::string& out, char32_t c) {  // stand-ins are below U+0800: 1 or 2 bytes
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

std::string to_byte_level(std::string_view bytes) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, a.char_of[b]);
  return out;
}

std::optional<std::string> from_byte_level(std::string_view token) {
  const Alphabet& a = alphabet();
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    auto b0 = static_cast<unsigned char>(token[i]);
    char32_t c;
    if (b0 < 0x80) {
      c = b0, i += 1;
    } else if ((b0 & 0xE0) == 0xC0 && i + 1 < token.size()) {
      c = (char32_t(b0 & 0x1F) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3F), i += 2;
    } else {
      return std::nullopt;  // three or four bytes: past U+07FF, no stand-in
    }
    if (c >= a.byte_of.size() || a.byte_of[c] < 0) return std::nullopt;
    out.push_back(static_cast<char>(a.byte_of[c]));
  }
  return out;
}

}  // namespace fusor::text
