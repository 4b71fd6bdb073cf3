// A tiny well-formedness check for generated HTML/SVG in tests: every element closes in order
// (HTML void elements excepted), and every '&' starts an entity. Returns "" when well formed,
// else the first problem.
#pragma once
#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace fusor::test {

inline std::string markup_problem(const std::string& s) {
  static const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link", "wbr"};
  std::vector<std::string> open;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '&') {
      size_t semi = s.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return "bare & at " + std::to_string(i);
      for (size_t k = i + 1; k < semi; ++k)
        if (!std::isalnum(static_cast<unsigned char>(s[k])) && s[k] != '#') return "bare & at " + std::to_string(i);
      continue;
    }
    if (s[i] == '>') return "bare > at " + std::to_string(i);
    if (s[i] != '<') continue;
    size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '!') continue;  // doctype, comment
    if (tag.find('<') != std::string::npos)
      return "'<' inside tag <" + tag + ">";
    const bool closing = tag[0] == '/';
    const bool self_closing = tag.back() == '/';
    size_t name_end = tag.find_first_of(" /\n", closing ? 1 : 0);
    std::string name = tag.substr(closing ? 1 : 0, name_end == std::string::npos ? std::string::npos : name_end - (closing ? 1 : 0));
    if (closing) {
      if (open.empty() || open.back() != name) return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
    } else if (!self_closing && !kVoid.count(name)) {
      open.push_back(name);
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closed";
}

}  // namespace fusor::test
