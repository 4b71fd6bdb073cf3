#include "text/pre_tokenizer.h"

#include <algorithm>

#include "text/byte_level.h"

namespace fusor::text {
namespace {

struct Span {
  size_t begin, end;
  bool is_match;
};

// The whole text as alternating unmatched and matched spans.
std::vector<Span> spans_of(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches, bool invert) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b > prev) spans.push_back({prev, b, invert});
    spans.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < text.size()) spans.push_back({prev, text.size(), invert});
  return spans;
}

std::vector<std::pair<size_t, size_t>> literal_matches(std::string_view text, const std::string& literal) {
  std::vector<std::pair<size_t, size_t>> out;
  if (literal.empty()) return out;
  for (size_t at = text.find(literal); at != std::string_view::npos; at = text.find(literal, at + literal.size()))
    out.emplace_back(at, at + literal.size());
  return out;
}

// The pieces `behavior` makes of the spans, as [begin, end) ranges.
std::vector<std::pair<size_t, size_t>> pieces_of(const std::vector<Span>& spans, SplitBehavior behavior) {
  std::vector<std::pair<size_t, size_t>> out;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const Span& s : spans)
        if (!s.is_match) out.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::Isolated:
      for (const Span& s : spans) out.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::MergedWithPrevious:  // a match joins the unmatched piece before it
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) out.back().second = s.end;
        else out.emplace_back(s.begin, s.end);
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:  // a match joins the unmatched piece after it
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) out.back().first = it->begin;
        else out.emplace_back(it->begin, it->end);
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    case SplitBehavior::Contiguous:  // runs of matches join, as do runs of non-matches
      for (size_t i = 0; i < spans.size(); ++i) {
        if (i > 0 && spans[i].is_match == previous_match) out.back().second = spans[i].end;
        else out.emplace_back(spans[i].begin, spans[i].end);
        previous_match = spans[i].is_match;
      }
      break;
  }
  return out;
}

void split_into(std::string_view text, const PreTokenizeStep& step, std::vector<std::string>& out) {
  std::vector<std::pair<size_t, size_t>> matches =
      step.regex ? step.regex->find_all(text) : literal_matches(text, step.literal);
  for (auto [b, e] : pieces_of(spans_of(text, matches, step.invert), step.behavior))
    if (e > b) out.emplace_back(text.substr(b, e - b));
}

void byte_level_into(std::string_view text, const PreTokenizeStep& step, std::vector<std::string>& out) {
  std::string prefixed;
  if (step.add_prefix_space && (text.empty() || text[0] != ' ')) {
    prefixed.reserve(text.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(text);
    text = prefixed;
  }
  if (!step.use_regex) {
    if (!text.empty()) out.push_back(to_byte_level(text));
    return;
  }
  for (auto [b, e] : pieces_of(spans_of(text, gpt2_split_regex().find_all(text), false), SplitBehavior::Isolated))
    if (e > b) out.push_back(to_byte_level(text.substr(b, e - b)));
}

}  // namespace

const Regex& gpt2_split_regex() {
  static const Regex r(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)");
  return r;
}

std::vector<std::string> PreTokenizer::words(std::string_view text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  for (const PreTokenizeStep& step : steps_) {
    std::vector<std::string> next;
    for (const std::string& p : pieces) {
      if (step.kind == PreTokenizeStep::Kind::Split) split_into(p, step, next);
      else byte_level_into(p, step, next);
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace fusor::text
