// A compiled Unicode regex (PCRE2 with UTF and Unicode properties) for pre-tokenizer splits:
// \p{L}, \p{N}, \s and lookahead, as GPT-2's and Llama 3's patterns use them.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fusor::text {

class Regex {
 public:
  // Throws fusor::Error (InvalidModel) naming the pattern, the offset and PCRE2's reason.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // [begin, end) byte offsets of every non-overlapping match, left to right. `text` must be
  // valid UTF-8. After an empty match the search moves on by one character.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
  std::string pattern_;
};

}  // namespace fusor::text
