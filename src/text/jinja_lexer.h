// Splits a Jinja template into text and tags, then a tag's inside into tokens. Whitespace is
// handled here, as jinja2 does with the settings transformers renders chat templates with
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off): line endings become "\n", one
// trailing newline is dropped, "-" on a tag strips all whitespace on that side, "+" keeps it, the
// newline after a {% %} or {# #} tag goes (trim_blocks), and so do the spaces and tabs before such
// a tag when only they stand between it and the start of its line (lstrip_blocks).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace fusor::text::jinja {

// A syntax error; the line is the template's (1-based).
struct SyntaxError {
  int line;
  std::string message;
};

struct Segment {
  enum class Kind { Text, Output, Statement };  // text, {{ }}, {% %} (comments are dropped)
  Kind kind;
  std::string text;  // the text, or the tag's inside without its delimiters and "-"/"+" marks
  int line;          // where the segment starts
};

std::vector<Segment> split_template(std::string_view source);

struct Token {
  enum class Kind { Name, String, Int, Float, Op, End };
  Kind kind;
  std::string text;  // a name, an operator, a string's value after escapes, a number's digits
  int line;
};

// The tokens of a tag's inside, ending with one End token.
std::vector<Token> tokenize_expression(const Segment& tag);

}  // namespace fusor::text::jinja
