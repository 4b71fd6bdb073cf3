// The config file schema (one table row per key) and its strict parser. yaml-cpp builds the
// node tree and gives each node its line and column; this file walks only the known schema, so
// deep, aliased or cyclic input never recurses here (yaml-cpp's own depth guard bounds parsing).
//
// Why documents are counted with a bounded event pass instead of YAML::LoadAll: yaml-cpp 0.7
// does not consume a stray ',' at block level (",", "[a]\n,"), so each HandleNextDocument
// returns the same empty document again and LoadAll loops until memory runs out (upstream
// jbeder/yaml-cpp#1040, fixed by #1318/#1319 after 0.7). Two documents starting at the same
// position mean that stuck token; it is reported as a syntax error.
#include "fusor/config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "fusor/error.h"

namespace fusor {

const char* precision_check_name(PrecisionCheck p) {
  switch (p) {
    case PrecisionCheck::Strict: return "strict";
    case PrecisionCheck::Relaxed: return "relaxed";
    case PrecisionCheck::Off: return "off";
  }
  return "?";
}

namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

enum class Kind { Section, Bool, Number, Precision, NameList };

struct Key {
  std::string_view path;
  Kind kind;
  bool& (*flag)(Config&) = nullptr;  // Kind::Bool only
};

// The schema. Sections come before their keys; "a.b" is key b inside section a.
const Key kKeys[] = {
    {"fusion", Kind::Section},
    {"fusion.fuse_elemwise", Kind::Bool, [](Config& c) -> bool& { return c.fusion.fuse_elemwise; }},
    {"fusion.fuse_norm_act", Kind::Bool, [](Config& c) -> bool& { return c.fusion.fuse_norm_act; }},
    {"fusion.fuse_gemm_epilogue", Kind::Bool, [](Config& c) -> bool& { return c.fusion.fuse_gemm_epilogue; }},
    {"fusion.fuse_attention", Kind::Bool, [](Config& c) -> bool& { return c.fusion.fuse_attention; }},
    {"fusion.precision_check", Kind::Precision},
    {"fusion.disabled", Kind::NameList},
    {"kernel", Kind::Section},
    {"kernel.reorder_for_coalesce", Kind::Bool, [](Config& c) -> bool& { return c.kernel.reorder_for_coalesce; }},
    {"batch_window_ms", Kind::Number},
    {"mem_reuse", Kind::Bool, [](Config& c) -> bool& { return c.mem_reuse; }},
    {"fold_constants", Kind::Bool, [](Config& c) -> bool& { return c.fold_constants; }},
};

const Key* find_key(std::string_view path) {
  for (const Key& k : kKeys)
    if (k.path == path) return &k;
  return nullptr;
}

std::string_view parent_of(std::string_view path) {
  auto dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : path.substr(0, dot);
}
std::string_view leaf_of(std::string_view path) {
  auto dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'x'?)" for an unknown key `name` inside `section`: the closest sibling by
// edit distance, else the same name in another section (given by its full path), else "".
std::string suggestion(std::string_view section, std::string_view name) {
  if (name.size() > 64) return "";
  const Key* best = nullptr;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const Key& k : kKeys) {
    if (parent_of(k.path) != section) continue;
    size_t d = edit_distance(name, leaf_of(k.path));
    if (d < best_d) best = &k, best_d = d;
  }
  if (best) return " (did you mean '" + std::string(leaf_of(best->path)) + "'?)";
  for (const Key& k : kKeys)
    if (leaf_of(k.path) == name) return " (did you mean '" + std::string(k.path) + "'?)";
  return "";
}

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one.
size_t utf8_length(const std::string& s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90))
    return 0;  // overlong, surrogate, or beyond U+10FFFF
  return n;
}

// Text from the file as it may appear inside a one-line message: control characters and
// bytes that are not UTF-8 escaped, and at most about 60 bytes.
std::string shown(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= 60) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else if (size_t n = c >= 0x80 ? utf8_length(s, i) : 0) {
      out.append(s, i, n);
      i += n;
      continue;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
    ++i;
  }
  return out;
}

std::string described(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "'" + shown(n.Scalar()) + "'";
    default: return "nothing";
  }
}

// Plain (unquoted, untagged) scalars are YAML's booleans and numbers; quoted ones are strings.
bool is_plain(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "?"; }

// Records where each document starts; ignores everything else.
struct DocumentStarts : YAML::EventHandler {
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& m) override { starts.push_back(m); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Mark& m, const std::string& message) const {
    std::string where = source_;
    if (!m.is_null() && m.line >= 0) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    throw Error(where + ": " + message);
  }

  Config parse(const std::string& text) {
    YAML::Node top;
    try {
      std::istringstream in(text);
      YAML::Parser events(in);
      DocumentStarts docs;
      while (docs.starts.size() < 4 && events.HandleNextDocument(docs)) {
        size_t n = docs.starts.size();
        if (n >= 2 && docs.starts[n - 1].pos == docs.starts[n - 2].pos) {
          size_t pos = static_cast<size_t>(std::max(0, docs.starts[n - 1].pos));
          bool printable = pos < text.size() && text[pos] > ' ' && text[pos] < 0x7f;
          fail(docs.starts[n - 1], "YAML syntax error: unexpected " +
                                       (printable ? "'" + std::string(1, text[pos]) + "'" : std::string("character")));
        }
      }
      if (docs.starts.size() > 1)
        fail(docs.starts[1], "the config must be one YAML document; a second one starts here");
      top = YAML::Load(text);
    } catch (const Error&) {
      throw;
    } catch (const YAML::DeepRecursion& e) {
      fail(e.mark, "YAML nesting is too deep (" + std::to_string(e.depth()) + " levels)");
    } catch (const YAML::Exception& e) {
      fail(e.mark, "YAML syntax error: " + shown(e.msg));
    }
    Config config;
    if (top.IsNull()) return config;
    if (!top.IsMap())
      fail(top.Mark(), "the top level must be a mapping of keys (fusion, kernel, batch_window_ms, mem_reuse, "
                       "fold_constants), got " + described(top));
    walk(top, "", config);
    return config;
  }

 private:
  void walk(const YAML::Node& map, const std::string& section, Config& config) {
    std::map<std::string, int> seen;  // key -> 1-based line of its first occurrence
    for (const auto& pair : map) {  // iterator values are temporaries: copy the node handles
      const YAML::Node key = pair.first;
      const YAML::Node value = pair.second;
      if (!key.IsScalar())
        fail(key.Mark(),
             "keys must be names, got " + described(key) + (section.empty() ? "" : " in '" + section + "'"));
      std::string path = section.empty() ? key.Scalar() : section + "." + key.Scalar();
      auto [first, inserted] = seen.emplace(key.Scalar(), key.Mark().line + 1);
      if (!inserted)
        fail(key.Mark(), "duplicate key '" + shown(path) + "' (first at line " + std::to_string(first->second) + ")");
      const Key* k = find_key(path);
      if (!k) fail(key.Mark(), "unknown key '" + shown(path) + "'" + suggestion(section, key.Scalar()));
      // A key with no value: a section left empty (all its keys commented out) keeps its
      // defaults; a setting needs a value. Its mark is the key's, the value's points past it.
      const YAML::Mark& at = value.IsNull() ? key.Mark() : value.Mark();
      switch (k->kind) {
        case Kind::Section:
          if (value.IsNull()) break;
          if (!value.IsMap()) fail(at, "'" + path + "' must be a mapping of keys, got " + described(value));
          walk(value, path, config);
          break;
        case Kind::Bool: k->flag(config) = parse_bool(value, at, path); break;
        case Kind::Number: config.batch_window_ms = parse_non_negative(value, at, path); break;
        case Kind::Precision: config.fusion.precision_check = parse_precision(value, at, path); break;
        case Kind::NameList: config.fusion.disabled = parse_names(value, at, path); break;
      }
    }
  }

  bool parse_bool(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (is_plain(v)) {
      const std::string& s = v.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
    }
    fail(at, "'" + path + "' must be true or false, got " + described(v) + quoted_note(v));
  }

  double parse_non_negative(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (is_plain(v)) {
      const std::string& s = v.Scalar();
      double x = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(x) && x >= 0) return x == 0 ? 0.0 : x;
    }
    fail(at, "'" + path + "' must be a non-negative number, got " + described(v) + quoted_note(v));
  }

  PrecisionCheck parse_precision(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (v.IsScalar()) {
      for (auto p : {PrecisionCheck::Strict, PrecisionCheck::Relaxed, PrecisionCheck::Off})
        if (v.Scalar() == precision_check_name(p)) return p;
    }
    fail(at, "'" + path + "' must be one of strict, relaxed, off, got " + described(v));
  }

  std::vector<std::string> parse_names(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (!v.IsSequence()) fail(at, "'" + path + "' must be a list of fusion item names, got " + described(v));
    std::vector<std::string> names;
    std::map<std::string, int> seen;
    for (const YAML::Node item : v) {
      if (!item.IsScalar() || item.Scalar().empty())
        fail(item.IsNull() ? at : item.Mark(), "'" + path + "' must list fusion item names, got " + described(item));
      const std::string& name = item.Scalar();
      if (std::any_of(name.begin(), name.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; }))
        fail(item.Mark(), "'" + path + "': fusion item name '" + shown(name) + "' contains whitespace");
      auto [first, inserted] = seen.emplace(name, item.Mark().line + 1);
      if (!inserted)
        fail(item.Mark(), "'" + path + "' lists '" + shown(name) + "' twice (first at line " +
                              std::to_string(first->second) + ")");
      names.push_back(name);
    }
    return names;
  }

  static std::string quoted_note(const YAML::Node& v) {
    return v.IsScalar() && !is_plain(v) ? " (quoted or tagged, so a string)" : "";
  }

  std::string source_;
};

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& source_name) {
  Parser parser(source_name);
  try {
    return parser.parse(yaml_text);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // yaml-cpp outside the parse step; never expected
    throw Error(source_name + ": cannot read config: " + shown(e.what()));
  }
}

Config load_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": cannot read config file: is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read config file: " + std::strerror(errno));
  std::string text;
  char buf[64 * 1024];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw Error(path + ": config file is larger than 1 MiB; is it really a config file?");
  }
  if (in.bad()) throw Error(path + ": cannot read config file: read error");
  return parse_config(text, path);
}

}  // namespace fusor
