#include "text/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace fusor::text::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

int lines_in(std::string_view s) { return int(std::count(s.begin(), s.end(), '\n')); }

// Where the tag opened at `open` ends: the index of its closing delimiter's first character
// (after a "-" or "+" mark). As jinja2's lexer does, a '%}' inside a quoted string or a '}}'
// inside open brackets ({{ {'a': {'b': 1}} }}) does not close the tag.
size_t find_close(const std::string& src, size_t open, char kind, int line) {
  const char closer = kind == '{' ? '}' : kind;  // "}}", "%}", "#}"
  int depth = 0;
  for (size_t i = open + 2; i + 1 < src.size(); ++i) {
    char c = src[i];
    if (kind == '#') {
      if (c == '#' && src[i + 1] == '}') return i;
      continue;
    }
    if (c == '\'' || c == '"') {
      for (++i; i < src.size() && src[i] != c; ++i)
        if (src[i] == '\\') ++i;
      if (i >= src.size()) break;
      continue;
    }
    if (depth == 0 && c == closer && src[i + 1] == '}') return i;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
  }
  const char* name = kind == '{' ? "{{" : kind == '%' ? "{%" : "{#";
  throw SyntaxError{line, std::string("unclosed '") + name + "'"};
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Where the {% endraw %} tag after `from` opens (npos if none), and whether it strips the
// whitespace before it ({%- endraw) or keeps it ({%+ endraw).
size_t find_endraw(const std::string& src, size_t from, char& mark) {
  for (size_t open = src.find("{%", from); open != std::string::npos; open = src.find("{%", open + 2)) {
    size_t i = open + 2;
    mark = i < src.size() && (src[i] == '-' || src[i] == '+') ? src[i++] : 0;
    while (i < src.size() && is_space(src[i])) ++i;
    if (src.compare(i, 6, "endraw") != 0) continue;
    i += 6;
    while (i < src.size() && is_space(src[i])) ++i;
    if (i < src.size() && (src[i] == '-' || src[i] == '+')) ++i;
    if (src.compare(i, 2, "%}") == 0) return open;
  }
  return std::string::npos;
}

}  // namespace

std::vector<Segment> split_template(std::string_view source) {
  const std::string src = normalize_newlines(source);
  std::vector<Segment> out;
  size_t pos = 0;
  int line = 1;
  bool closing_raw = false;  // the next tag is the {% endraw %} of a raw block
  while (pos <= src.size()) {
    size_t open = pos;
    while ((open = src.find('{', open)) != std::string::npos &&
           (open + 1 >= src.size() || (src[open + 1] != '{' && src[open + 1] != '%' && src[open + 1] != '#')))
      ++open;
    std::string text = src.substr(pos, (open == std::string::npos ? src.size() : open) - pos);
    int text_line = line;
    line += lines_in(text);
    if (open == std::string::npos) {
      if (!text.empty()) out.push_back({Segment::Kind::Text, text, text_line});
      break;
    }
    const char kind = src[open + 1];
    const char mark = open + 2 < src.size() ? src[open + 2] : 0;
    if (mark == '-') {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (mark != '+' && kind != '{') {  // lstrip_blocks
      size_t line_start = text.rfind('\n');
      line_start = line_start == std::string::npos ? 0 : line_start + 1;
      bool line_starting = line_start > 0 || pos == 0 || src[pos - 1] == '\n';
      if (line_starting && std::all_of(text.begin() + line_start, text.end(), is_space)) text.resize(line_start);
    }
    if (!text.empty()) out.push_back({Segment::Kind::Text, text, text_line});

    size_t close = find_close(src, open, kind, line);
    size_t inner_begin = open + 2 + (mark == '-' || mark == '+');
    bool strip_after = close > inner_begin && src[close - 1] == '-';
    bool keep_after = close > inner_begin && src[close - 1] == '+' && kind != '{';
    size_t inner_end = close - (strip_after || keep_after);
    std::string inner = src.substr(inner_begin, std::max(inner_begin, inner_end) - inner_begin);
    const bool raw = kind == '%' && trimmed(inner) == "raw";
    const bool raw_end = kind == '%' && closing_raw && trimmed(inner) == "endraw";
    closing_raw = false;
    if (kind != '#' && !raw && !raw_end)
      out.push_back({kind == '{' ? Segment::Kind::Output : Segment::Kind::Statement, inner, line});
    line += lines_in(src.substr(open, close + 2 - open));
    pos = close + 2;
    if (strip_after) {
      while (pos < src.size() && is_space(src[pos])) line += src[pos++] == '\n';
    } else if (!keep_after && !raw && kind != '{' && pos < src.size() && src[pos] == '\n') {  // trim_blocks (not raw's, as jinja2)
      ++pos, ++line;
    }
    if (raw) {  // {% raw %}: the text up to {% endraw %} as it is, with the tags' whitespace rules
      char mark = 0;
      const size_t end = find_endraw(src, pos, mark);
      if (end == std::string::npos) throw SyntaxError{line, "missing '{% endraw %}'"};
      std::string text = src.substr(pos, end - pos);
      if (mark == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (mark != '+') {  // lstrip_blocks
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_start > 0 || src[pos - 1] == '\n') && std::all_of(text.begin() + line_start, text.end(), is_space))
          text.resize(line_start);
      }
      if (!text.empty()) out.push_back({Segment::Kind::Text, text, line});
      line += lines_in(src.substr(pos, end - pos));
      pos = end;
      closing_raw = true;  // the endraw tag at `end` is dropped, its whitespace rules kept
      continue;
    }
    if (pos == src.size()) break;
  }
  return out;
}

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) cp = 0xfffd;
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string literal's value: Python's escapes (\n, \t, \\, \', \xhh, \uXXXX, ...); an unknown
// escape keeps its backslash, as Python does.
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    char e = body[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\n': break;  // a backslash-newline continues the line
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          int d = i + 1 + k < body.size() ? hex_digit(body[i + 1 + k]) : -1;
          if (d < 0) throw SyntaxError{line, std::string("truncated \\") + e + " escape in a string"};
          cp = cp * 16 + uint32_t(d);
        }
        i += n;
        append_utf8(out, cp);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {  // up to three octal digits
          uint32_t cp = uint32_t(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            cp = cp * 8 + uint32_t(body[++i] - '0');
          append_utf8(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

}  // namespace

std::vector<Token> tokenize_expression(const Segment& tag) {
  static const char* const kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                     "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "="};
  const std::string& s = tag.text;
  std::vector<Token> out;
  int line = tag.line;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (is_space(c)) {
      line += c == '\n';
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::Name, s.substr(i, j - i), line});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      auto digits = [&] {
        while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      };
      digits();
      bool is_float = false;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        ++j, digits(), is_float = true;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1 + (j + 1 < s.size() && (s[j + 1] == '+' || s[j + 1] == '-'));
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) j = k, digits(), is_float = true;
      }
      std::string text;
      for (size_t k = i; k < j; ++k)
        if (s[k] != '_') text += s[k];
      out.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, text, line});
      i = j;
    } else if (c == '\'' || c == '"') {
      size_t j = i + 1;
      while (j < s.size() && s[j] != c) j += s[j] == '\\' ? 2 : 1;
      if (j >= s.size()) throw SyntaxError{line, "unterminated string"};
      out.push_back({Token::Kind::String, unescape(std::string_view(s).substr(i + 1, j - i - 1), line), line});
      line += lines_in(std::string_view(s).substr(i, j - i));
      i = j + 1;
    } else {
      const char* op = nullptr;
      for (const char* candidate : kOps)
        if (s.compare(i, std::char_traits<char>::length(candidate), candidate) == 0) {
          op = candidate;
          break;
        }
      if (!op) throw SyntaxError{line, std::string("unexpected character '") + c + "'"};
      out.push_back({Token::Kind::Op, op, line});
      i += std::char_traits<char>::length(op);
    }
  }
  out.push_back({Token::Kind::End, "", line});
  return out;
}

}  // namespace fusor::text::jinja
