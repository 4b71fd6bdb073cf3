// Cuts text into the words BPE merges within: ByteLevel and Split steps run in order, each on
// every piece the previous one left (Hugging Face's Sequence). A step's output pieces are never
// empty.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/regex.h"

namespace fusor::text {

// How a Split keeps the pieces its pattern matches (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct PreTokenizeStep {
  enum class Kind { ByteLevel, Split } kind = Kind::ByteLevel;
  // ByteLevel: a space before a piece that does not start with one; GPT-2's regex split; then
  // every byte becomes its stand-in character.
  bool add_prefix_space = false;
  bool use_regex = true;
  // Split: a regex, or a literal when regex is null.
  std::shared_ptr<const Regex> regex;
  std::string literal;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;  // the pattern marks what to keep, not where to cut
};

class PreTokenizer {
 public:
  explicit PreTokenizer(std::vector<PreTokenizeStep> steps) : steps_(std::move(steps)) {}
  // The words of one stretch of text (between added tokens), in order.
  std::vector<std::string> words(std::string_view text) const;

 private:
  std::vector<PreTokenizeStep> steps_;
};

// GPT-2's split (Hugging Face's ByteLevel with use_regex), compiled once.
const Regex& gpt2_split_regex();

}  // namespace fusor::text
