// Added tokens (special ones such as "<|endoftext|>", and user additions) are found in the raw
// text before pre-tokenization, so a marker never gets split into pieces. As in Hugging Face,
// tokens with normalized=false are matched first, then those with normalized=true in what is
// left; each pass takes the leftmost match, the longest at that position, without overlap.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusor/tokenizer.h"

namespace fusor::text {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool single_word = false;  // only where no word character (\w) touches it on either side
  bool lstrip = false;       // takes the whitespace before it
  bool rstrip = false;       // takes the whitespace after it
  bool normalized = true;
  bool special = false;
};

// A stretch of the text: an added token's id, or plain text for the model.
struct TextSegment {
  std::string_view text;
  std::optional<TokenId> token;
};

class AddedTokens {
 public:
  explicit AddedTokens(std::vector<AddedToken> tokens);
  // `text` cut at every match, in order; no segment is empty.
  std::vector<TextSegment> split(std::string_view text) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  void split_pass(std::string_view text, bool normalized, std::vector<TextSegment>& out) const;
  std::vector<AddedToken> tokens_;
  std::array<std::vector<size_t>, 256> by_first_byte_[2];  // [normalized][first byte] -> tokens_ index
};

}  // namespace fusor::text
