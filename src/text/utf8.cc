#include "text/utf8.h"

namespace fusor::text {
namespace {

// How one well-formed or broken sequence starting at `i` reads.
struct Step {
  size_t length;    // bytes consumed
  bool valid;       // a whole character (else one U+FFFD for the `length` bytes)
  bool truncated;   // invalid only because the input ended inside it
};

// The range the second byte must fall in after a lead byte (Unicode Table 3-7); the rest take
// 80..BF. Leads C0, C1 and F5..FF (overlongs, past U+10FFFF) and continuation bytes take none.
bool second_byte_range(unsigned char lead, size_t& width, unsigned char& lo, unsigned char& hi) {
  lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) width = 2;
  else if (lead == 0xE0) width = 3, lo = 0xA0;
  else if (lead == 0xED) width = 3, hi = 0x9F;  // no surrogates
  else if (lead >= 0xE1 && lead <= 0xEF) width = 3;
  else if (lead == 0xF0) width = 4, lo = 0x90;
  else if (lead == 0xF4) width = 4, hi = 0x8F;
  else if (lead >= 0xF1 && lead <= 0xF3) width = 4;
  else return false;
  return true;
}

Step step_at(std::string_view s, size_t i) {
  auto lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return {1, true, false};
  size_t width;
  unsigned char lo, hi;
  if (!second_byte_range(lead, width, lo, hi)) return {1, false, false};
  for (size_t k = 1; k < width; ++k) {
    if (i + k >= s.size()) return {k, false, true};
    auto b = static_cast<unsigned char>(s[i + k]);
    if (k > 1) lo = 0x80, hi = 0xBF;
    if (b < lo || b > hi) return {k, false, false};
  }
  return {width, true, false};
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    Step st = step_at(s, i);
    if (!st.valid) return false;
    i += st.length;
  }
  return true;
}

std::string lossy_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    Step st = step_at(bytes, i);
    if (st.valid) out.append(bytes.substr(i, st.length));
    else out.append("\xEF\xBF\xBD");
    i += st.length;
  }
  return out;
}

size_t settled_utf8_prefix(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    Step st = step_at(bytes, i);
    if (st.truncated) return i;
    i += st.length;
  }
  return bytes.size();
}

size_t utf8_char_length(unsigned char lead) {
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  return 1;
}

}  // namespace fusor::text
