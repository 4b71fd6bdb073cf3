// UTF-8 checks and the lossy reading that decoding and streaming share.
#pragma once
#include <string>
#include <string_view>

namespace fusor::text {

// Whether `s` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool is_valid_utf8(std::string_view s);

// `bytes` as UTF-8 with each maximal invalid subpart (and a sequence cut off at the end) replaced
// by one U+FFFD: the Unicode-recommended practice, which Rust's from_utf8_lossy and so Hugging
// Face's decoders follow.
std::string lossy_utf8(std::string_view bytes);

// The length of the longest prefix of `bytes` whose lossy reading no later byte can change: all
// of it except a trailing, so far valid, start of a multi-byte character.
size_t settled_utf8_prefix(std::string_view bytes);

// The length in bytes of the character starting at `s[0]` (valid UTF-8 assumed; 1 for a stray byte).
size_t utf8_char_length(unsigned char lead);

}  // namespace fusor::text
