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
#include <set>
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

enum class Kind { Section, Bool, Number, Precision, NameList, Count, Name, PadValues, Classes, Matrix,
                  Record };  // Record: fusor tune's measurements, read by fusor plan (src/tune)

struct Key {
  std::string_view path;
  Kind kind;
  bool& (*flag)(Config&) = nullptr;      // Kind::Bool only
  int64_t& (*count)(Config&) = nullptr;  // Kind::Count only
  int64_t max = INT64_MAX;                // Kind::Count only: the largest value accepted
};

// The schema. Sections come before their keys; "a.b" is key b inside section a.
const Key kKeys[] = {
    {"fusion", Kind::Section},
#define FUSOR_SWITCH_KEY(member, label, passes, description) \
  {"fusion." #member, Kind::Bool, [](Config& c) -> bool& { return c.fusion.member; }},
    FUSOR_FUSION_SWITCHES(FUSOR_SWITCH_KEY)
#undef FUSOR_SWITCH_KEY
    {"fusion.precision_check", Kind::Precision},
    {"fusion.disabled", Kind::NameList},
    {"kernel", Kind::Section},
    {"kernel.reorder_for_coalesce", Kind::Bool, [](Config& c) -> bool& { return c.kernel.reorder_for_coalesce; }},
    {"batch_window_ms", Kind::Number},
    {"mem_reuse", Kind::Bool, [](Config& c) -> bool& { return c.mem_reuse; }},
    {"fold_constants", Kind::Bool, [](Config& c) -> bool& { return c.fold_constants; }},
    {"serve", Kind::Section},
    {"serve.default_class", Kind::Name},
    {"serve.execution_contexts", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.execution_contexts; },
     kMaxExecutionContexts},
    {"serve.max_body_bytes", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.max_body_bytes; }},
    {"serve.seq_bucket", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.seq_bucket; },
     kMaxConfigCount},
    {"serve.packing", Kind::Bool, [](Config& c) -> bool& { return c.serve.packing; }},
    {"serve.prebuild_plans", Kind::Bool, [](Config& c) -> bool& { return c.serve.prebuild_plans; }},
    {"serve.token_bucket", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.token_bucket; },
     kMaxConfigCount},
    {"serve.max_sequences", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.max_sequences; },
     kMaxConfigCount},
    {"serve.step_tokens", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.step_tokens; },
     kMaxConfigCount},
    {"serve.kv_cache_tokens", Kind::Count, nullptr, [](Config& c) -> int64_t& { return c.serve.kv_cache_tokens; },
     kMaxConfigCount},
    {"serve.interrupt_steps", Kind::Bool, [](Config& c) -> bool& { return c.serve.interrupt_steps; }},
    {"serve.pad_values", Kind::PadValues},
    {"serve.classes", Kind::Classes},
    {"serve.matrix", Kind::Matrix},
    {"tuned", Kind::Record},
};

// The keys of one traffic class inside serve.classes.NAME.
constexpr std::string_view kClassKeys[] = {"batch_window_ms", "adaptive_window", "max_batch",      "preferred_batch_sizes",
                                           "priority",        "timeout_ms",      "max_queue_size", "max_batch_tokens",
                                           "max_running",     "prefill_chunk",   "prefill_chunk_contended",
                                           "ttft_target_ms",  "itl_target_ms"};
// The keys of one serve.matrix entry.
constexpr std::string_view kMatrixKeys[] = {"max_batch", "max_tokens", "fusion"};

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
    throw Error(where + ": " + message, ErrorKind::InvalidArgument);
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
                       "fold_constants, serve), got " + described(top));
    walk(top, "", config);
    finish_serve(config);
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
        case Kind::Number: config.batch_window_ms = parse_ms(value, at, path); break;
        case Kind::Precision: config.fusion.precision_check = parse_precision(value, at, path); break;
        case Kind::NameList: config.fusion.disabled = parse_names(value, at, path); break;
        case Kind::Count: k->count(config) = parse_count(value, at, path, 1, k->max); break;
        case Kind::Name:
          config.serve.default_class = parse_name(value, at, path);
          default_class_mark_ = at;
          break;
        case Kind::PadValues: config.serve.pad_values = parse_pad_values(value, at, path); break;
        case Kind::Classes:
          config.serve.classes = parse_classes(value, at, path);
          classes_mark_ = at;
          break;
        case Kind::Matrix: config.serve.matrix = parse_matrix(value, at, path); break;
        case Kind::Record:
          if (!value.IsMap()) fail(at, "'" + path + "' must be a mapping (written by fusor tune), got " + described(value));
          break;
      }
    }
  }

  // Serving defaults that depend on other keys, and checks across keys.
  void finish_serve(Config& config) const {
    // The top-level fusion section may come after serve.matrix in the file: resolve here.
    for (size_t i = 0; i < config.serve.matrix.size(); ++i) {
      config.serve.matrix[i].fusion = config.fusion;
      apply_fusion(matrix_fusion_[i], "serve.matrix[" + std::to_string(i) + "].fusion", config.serve.matrix[i].fusion);
    }
    for (auto& [name, c] : config.serve.classes)
      if (!window_set_.count(name)) c.batch_window_ms = config.batch_window_ms;
    const std::string& d = config.serve.default_class;
    if (!config.serve.classes.count(d)) {
      std::string names;
      for (const auto& [name, c] : config.serve.classes) names += (names.empty() ? "" : ", ") + name;
      fail(default_class_mark_.is_null() ? classes_mark_ : default_class_mark_,
           "'serve.default_class' is '" + shown(d) + "', which is not in serve.classes (" + shown(names) + ")");
    }
  }

  int64_t parse_count(const YAML::Node& v, const YAML::Mark& at, const std::string& path, int64_t min,
                      int64_t max = INT64_MAX) const {
    if (is_plain(v)) {
      const std::string& s = v.Scalar();
      int64_t x = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (ec == std::errc() && end == s.data() + s.size() && x >= min && x <= max) return x;
    }
    fail(at, "'" + path + "' must be " + (min > 0 ? "a positive" : "a non-negative") + " integer" +
                 (max < INT64_MAX ? " of at most " + std::to_string(max) : "") + ", got " + described(v) +
                 quoted_note(v));
  }

  std::string parse_name(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (v.IsNull())
      fail(at, "'" + path + "' must be a class name, got null (nothing, ~ or null; quote a name spelled null: \"null\")");
    if (v.IsScalar() && !v.Scalar().empty() && std::none_of(v.Scalar().begin(), v.Scalar().end(), [](unsigned char c) {
          return c <= ' ' || c == 0x7f;
        }))
      return v.Scalar();
    fail(at, "'" + path + "' must be a class name without whitespace, got " + described(v));
  }

  std::map<std::string, double> parse_pad_values(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (!v.IsMap()) fail(at, "'" + path + "' must be a mapping of input name to number, got " + described(v));
    std::map<std::string, double> out;
    for (const auto& pair : v) {
      const YAML::Node key = pair.first;
      const YAML::Node value = pair.second;
      if (!key.IsScalar() || key.Scalar().empty()) fail(key.Mark(), "'" + path + "' keys must be input names, got " + described(key));
      std::string item = path + "." + key.Scalar();
      if (out.count(key.Scalar())) fail(key.Mark(), "duplicate key '" + shown(item) + "'");
      out[key.Scalar()] = parse_number(value, value.IsNull() ? key.Mark() : value.Mark(), item);
    }
    return out;
  }

  std::map<std::string, TrafficClass> parse_classes(const YAML::Node& v, const YAML::Mark& at, const std::string& path) {
    if (!v.IsMap() || v.size() == 0)
      fail(at, "'" + path + "' must be a non-empty mapping of class name to settings, got " + described(v));
    std::map<std::string, TrafficClass> out;
    for (const auto& pair : v) {
      const YAML::Node key = pair.first;
      const YAML::Node value = pair.second;
      std::string name = parse_name(key, key.Mark(), path);
      std::string cpath = path + "." + name;
      if (out.count(name)) fail(key.Mark(), "duplicate key '" + shown(cpath) + "'");
      if (!value.IsMap() && !value.IsNull())
        fail(value.Mark(), "'" + cpath + "' must be a mapping of class settings, got " + described(value));
      out[name] = parse_class(value, cpath, name);
    }
    return out;
  }

  TrafficClass parse_class(const YAML::Node& map, const std::string& cpath, const std::string& name) {
    TrafficClass c;
    std::map<std::string, int> seen;
    YAML::Mark preferred_at;
    for (const auto& pair : map) {
      const YAML::Node key = pair.first;
      const YAML::Node v = pair.second;
      if (!key.IsScalar()) fail(key.Mark(), "keys must be names, got " + described(key) + " in '" + cpath + "'");
      const std::string& k = key.Scalar();
      std::string path = cpath + "." + k;
      auto [first, inserted] = seen.emplace(k, key.Mark().line + 1);
      if (!inserted) fail(key.Mark(), "duplicate key '" + shown(path) + "' (first at line " + std::to_string(first->second) + ")");
      const YAML::Mark& at = v.IsNull() ? key.Mark() : v.Mark();
      if (k == "batch_window_ms") c.batch_window_ms = parse_ms(v, at, path), window_set_.insert(name);
      else if (k == "adaptive_window") c.adaptive_window = parse_bool(v, at, path);
      else if (k == "max_batch") c.max_batch = parse_count(v, at, path, 1, kMaxConfigCount);
      else if (k == "priority") c.priority = parse_count(v, at, path, 0);
      else if (k == "timeout_ms") c.timeout_ms = parse_ms(v, at, path);
      else if (k == "max_queue_size") c.max_queue_size = parse_count(v, at, path, 1, kMaxConfigCount);
      else if (k == "max_batch_tokens") c.max_batch_tokens = parse_count(v, at, path, 1, kMaxConfigCount);
      else if (k == "max_running") c.max_running = parse_count(v, at, path, 0, kMaxConfigCount);
      else if (k == "prefill_chunk") c.prefill_chunk = parse_count(v, at, path, 0, kMaxConfigCount);
      else if (k == "prefill_chunk_contended") c.prefill_chunk_contended = parse_count(v, at, path, 0, kMaxConfigCount);
      else if (k == "ttft_target_ms") c.ttft_target_ms = parse_ms(v, at, path);
      else if (k == "itl_target_ms") c.itl_target_ms = parse_ms(v, at, path);
      else if (k == "preferred_batch_sizes") {
        preferred_at = at;
        if (!v.IsSequence()) fail(at, "'" + path + "' must be a list of positive integers, got " + described(v));
        for (const YAML::Node item : v) {
          int64_t n = parse_count(item, item.IsNull() ? at : item.Mark(), path, 1, kMaxConfigCount);
          if (!c.preferred_batch_sizes.empty() && n <= c.preferred_batch_sizes.back())
            fail(item.Mark(), "'" + path + "' must be strictly ascending");
          c.preferred_batch_sizes.push_back(n);
        }
      } else {
        std::string hint;
        size_t best_d = std::max<size_t>(2, k.size() / 3) + 1;
        for (std::string_view known : kClassKeys)
          if (size_t d = k.size() > 64 ? best_d : edit_distance(k, known); d < best_d)
            best_d = d, hint = " (did you mean '" + std::string(known) + "'?)";
        fail(key.Mark(), "unknown key '" + shown(path) + "'" + hint);
      }
    }
    if (!c.preferred_batch_sizes.empty() && c.preferred_batch_sizes.back() > c.max_batch)
      fail(preferred_at, "'" + cpath + ".preferred_batch_sizes' must not exceed max_batch (" +
                             std::to_string(c.max_batch) + ")");
    return c;
  }

  // serve.matrix: a list of {max_batch, fusion} with strictly ascending max_batch. Each entry's
  // fusion keys are checked now (against a scratch config) and applied in finish_serve.
  std::vector<MatrixEntry> parse_matrix(const YAML::Node& v, const YAML::Mark& at, const std::string& path) {
    if (!v.IsSequence()) fail(at, "'" + path + "' must be a list of {max_batch, fusion} entries, got " + described(v));
    std::vector<MatrixEntry> out;
    matrix_fusion_.clear();
    for (const YAML::Node entry : v) {
      std::string epath = path + "[" + std::to_string(out.size()) + "]";
      const YAML::Mark& eat = entry.IsNull() ? at : entry.Mark();
      if (!entry.IsMap()) fail(eat, "'" + epath + "' must be a mapping with max_batch and fusion, got " + described(entry));
      MatrixEntry e;
      YAML::Node fusion;
      bool has_max = false, has_tokens = false;
      std::map<std::string, int> seen;
      for (const auto& pair : entry) {
        const YAML::Node key = pair.first;
        const YAML::Node value = pair.second;
        if (!key.IsScalar()) fail(key.Mark(), "keys must be names, got " + described(key) + " in '" + epath + "'");
        const std::string& k = key.Scalar();
        std::string kpath = epath + "." + k;
        auto [first, inserted] = seen.emplace(k, key.Mark().line + 1);
        if (!inserted) fail(key.Mark(), "duplicate key '" + shown(kpath) + "' (first at line " + std::to_string(first->second) + ")");
        const YAML::Mark& vat = value.IsNull() ? key.Mark() : value.Mark();
        if (k == "max_batch" || k == "max_tokens") {
          const bool tokens = k == "max_tokens";
          if (has_max || has_tokens) fail(key.Mark(), "'" + epath + "' has both max_batch and max_tokens; give one");
          (tokens ? e.max_tokens : e.max_batch) = parse_count(value, vat, kpath, 1, kMaxConfigCount);
          (tokens ? has_tokens : has_max) = true;
          auto same_kind = [&](const MatrixEntry& p) { return (p.max_tokens > 0) == tokens; };
          auto prev = std::find_if(out.rbegin(), out.rend(), same_kind);
          const int64_t bound = tokens ? e.max_tokens : e.max_batch;
          if (prev != out.rend() && bound <= (tokens ? prev->max_tokens : prev->max_batch))
            fail(vat, "'" + kpath + "' must be greater than the previous entry's (" +
                          std::to_string(tokens ? prev->max_tokens : prev->max_batch) + "): entries are " +
                          (tokens ? "token" : "batch-size") + " buckets in ascending order");
        } else if (k == "fusion") {
          FusionConfig scratch;
          apply_fusion(value, kpath, scratch);
          fusion = value;
        } else {
          std::string hint;
          for (std::string_view known : kMatrixKeys)
            if (k.size() <= 64 && edit_distance(k, known) <= std::max<size_t>(2, k.size() / 3))
              hint = " (did you mean '" + std::string(known) + "'?)";
          fail(key.Mark(), "unknown key '" + shown(kpath) + "'" + hint);
        }
      }
      if (!has_max && !has_tokens)
        fail(eat, "'" + epath + "' needs max_batch (the largest batch this entry applies to) or max_tokens");
      out.push_back(e);
      matrix_fusion_.push_back(fusion);
    }
    return out;
  }

  // Applies a fusion mapping (serve.matrix[i].fusion) over `f`: switches replace, disabled
  // names join f.disabled. precision_check stays the top level's: one verdict covers all buckets.
  void apply_fusion(const YAML::Node& v, const std::string& path, FusionConfig& f) const {
    if (!v.IsDefined() || v.IsNull()) return;
    if (!v.IsMap()) fail(v.Mark(), "'" + path + "' must be a mapping of fusion keys, got " + described(v));
    std::map<std::string, int> seen;
    for (const auto& pair : v) {
      const YAML::Node key = pair.first;
      const YAML::Node value = pair.second;
      if (!key.IsScalar()) fail(key.Mark(), "keys must be names, got " + described(key) + " in '" + path + "'");
      std::string kpath = path + "." + key.Scalar();
      auto [first, inserted] = seen.emplace(key.Scalar(), key.Mark().line + 1);
      if (!inserted) fail(key.Mark(), "duplicate key '" + shown(kpath) + "' (first at line " + std::to_string(first->second) + ")");
      const Key* k = find_key("fusion." + key.Scalar());
      if (!k) fail(key.Mark(), "unknown key '" + shown(kpath) + "'" + suggestion("fusion", key.Scalar()));
      const YAML::Mark& at = value.IsNull() ? key.Mark() : value.Mark();
      if (k->kind == Kind::Precision)
        fail(key.Mark(), "'" + kpath + "' cannot be set per bucket: the top-level fusion.precision_check applies to all");
      if (k->kind == Kind::Bool) {
        Config scratch;
        scratch.fusion = f;
        k->flag(scratch) = parse_bool(value, at, kpath);
        f = scratch.fusion;
      } else {  // Kind::NameList
        for (std::string& name : parse_names(value, at, kpath))
          if (std::find(f.disabled.begin(), f.disabled.end(), name) == f.disabled.end()) f.disabled.push_back(name);
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

  double parse_number(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (is_plain(v)) {
      const std::string& s = v.Scalar();
      double x = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (ec == std::errc() && end == s.data() + s.size() && std::isfinite(x)) return x;
    }
    fail(at, "'" + path + "' must be a number, got " + described(v) + quoted_note(v));
  }

  // A duration in milliseconds.
  double parse_ms(const YAML::Node& v, const YAML::Mark& at, const std::string& path) const {
    if (is_plain(v)) {
      const std::string& s = v.Scalar();
      double x = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      if (ec == std::errc() && end == s.data() + s.size() && x >= 0 && x <= kMaxConfigMs) return x == 0 ? 0.0 : x;
    }
    fail(at, "'" + path + "' must be a non-negative number of at most " + std::to_string(static_cast<int64_t>(kMaxConfigMs)) +
                 " (24 hours), got " + described(v) + quoted_note(v));
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
  std::set<std::string> window_set_;  // classes whose batch_window_ms the file sets
  std::vector<YAML::Node> matrix_fusion_;  // per serve.matrix entry: its fusion mapping (or none)
  YAML::Mark default_class_mark_ = YAML::Mark::null_mark(), classes_mark_ = YAML::Mark::null_mark();
};

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& source_name) {
  Parser parser(source_name);
  try {
    return parser.parse(yaml_text);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // yaml-cpp outside the parse step; never expected
    throw Error(source_name + ": cannot read config: " + shown(e.what()), ErrorKind::InvalidArgument);
  }
}

Config load_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": cannot read config file: is a directory", ErrorKind::InvalidArgument);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read config file: " + std::strerror(errno), ErrorKind::InvalidArgument);
  std::string text;
  char buf[64 * 1024];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw Error(path + ": config file is larger than 1 MiB; is it really a config file?", ErrorKind::InvalidArgument);
  }
  if (in.bad()) throw Error(path + ": cannot read config file: read error", ErrorKind::InvalidArgument);
  return parse_config(text, path);
}

}  // namespace fusor
