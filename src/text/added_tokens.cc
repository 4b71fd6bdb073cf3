#include "text/added_tokens.h"

#include <algorithm>

#include "text/regex.h"

namespace fusor::text {
namespace {

// Word characters and whitespace in Unicode's sense, as the Rust regex crate (and so Hugging
// Face) reads \w and \s.
const Regex& word_at_start() {
  static const Regex r(R"(^\w)");
  return r;
}
const Regex& word_at_end() {
  static const Regex r(R"(\w\z)");
  return r;
}
const Regex& space_at_start() {
  static const Regex r(R"(^\s*)");
  return r;
}
const Regex& space_at_end() {
  static const Regex r(R"(\s*\z)");
  return r;
}

bool matches(const Regex& r, std::string_view s) { return !r.find_all(s).empty(); }

}  // namespace

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].content.empty())
      by_first_byte_[tokens_[i].normalized][static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
}

std::vector<TextSegment> AddedTokens::split(std::string_view text) const {
  std::vector<TextSegment> first, out;
  split_pass(text, false, first);
  for (const TextSegment& s : first) {
    if (s.token) out.push_back(s);
    else split_pass(s.text, true, out);
  }
  return out;
}

void AddedTokens::split_pass(std::string_view text, bool normalized, std::vector<TextSegment>& out) const {
  size_t start_offset = 0;  // end of the last match taken
  for (size_t at = 0; at < text.size();) {
    const AddedToken* best = nullptr;
    for (size_t i : by_first_byte_[normalized][static_cast<unsigned char>(text[at])]) {
      const AddedToken& t = tokens_[i];
      if (text.substr(at).starts_with(t.content) && (!best || t.content.size() > best->content.size())) best = &t;
    }
    if (!best) {
      ++at;
      continue;
    }
    size_t start = at, stop = at + best->content.size();
    at = stop;
    if (best->single_word && ((start > 0 && matches(word_at_end(), text.substr(0, start))) ||
                              (stop < text.size() && matches(word_at_start(), text.substr(stop)))))
      continue;  // part of a longer word
    if (best->lstrip) start = std::max(space_at_end().find_all(text.substr(0, start)).front().first, start_offset);
    if (best->rstrip) stop += space_at_start().find_all(text.substr(stop)).front().second;
    if (start_offset < start) out.push_back({text.substr(start_offset, start - start_offset), std::nullopt});
    out.push_back({text.substr(start, stop - start), best->id});
    start_offset = stop;
    at = std::max(at, stop);
  }
  if (start_offset < text.size()) out.push_back({text.substr(start_offset), std::nullopt});
}

}  // namespace fusor::text
