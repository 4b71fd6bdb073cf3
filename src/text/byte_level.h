// GPT-2's byte-level alphabet: every byte has a printable stand-in character, so a BPE
// vocabulary of strings covers any byte sequence. Printable Latin-1 bytes stand for themselves;
// the others (controls, space, DEL, NBSP, soft hyphen) take U+0100 onwards in byte order.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace fusor::text {

// Each byte of `bytes` replaced by its stand-in character (as UTF-8).
std::string to_byte_level(std::string_view bytes);

// The bytes a token's stand-ins denote, or nullopt when a character of `token` is no stand-in
// (an added token such as "<|im start|>" with a space): the decoder then keeps its own bytes.
std::optional<std::string> from_byte_level(std::string_view token);

}  // namespace fusor::text
