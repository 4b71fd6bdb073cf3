// Config -> YAML text that parse_config reads back to an equal Config (fusor tune writes its
// result this way). Every key is written, so a tuned file says exactly what it sets.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>
#include <cstdio>
#include <sstream>

#include "fusor/config.h"

namespace fusor {
namespace {

std::string number(double x) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);  // shortest text that reads back exactly
  return std::string(buf, end);
}

const char* flag(bool b) { return b ? "true" : "false"; }

// Whether a plain scalar `s` reads as YAML's null, a boolean (1.1's yes/no/on/off too) or a
// number rather than a string: a class named null read back as no name at all.
bool typed_when_plain(const std::string& s) {
  static const char* const kWords[] = {"null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE",
                                       "yes",  "Yes",  "YES",  "no",   "No",   "NO",   "on",    "On",    "ON",
                                       "off",  "Off",  "OFF",  "y",    "Y",    "n",    "N"};
  if (std::any_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return s == w; })) return true;
  return std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.';  // 12, 1e3, .5, .inf, .nan
}

// A name as a YAML scalar that reads back to the same bytes: plain when it is made of letters,
// digits and _ . - / (not first) and reads as a string, else double-quoted with " \ and control
// bytes escaped. Input names may hold ':', ',' or spaces ("input:0"), which plain text would split or cut.
std::string yaml_name(const std::string& name) {
  auto safe = [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/'; };
  if (!name.empty() && name[0] != '-' && name[0] != '/' && std::all_of(name.begin(), name.end(), safe) &&
      !typed_when_plain(name))
    return name;
  std::string s = "\"";
  for (unsigned char c : name) {
    if (c == '"' || c == '\\') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      s += hex;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s + "\"";
}

// `name` as the key of a block mapping entry at `indent`, up to the value. YAML caps an implicit
// key at 1024 characters; a longer one is written as an explicit key ("? key" then ": ").
std::string mapping_key(const std::string& name, const std::string& indent) {
  const std::string key = yaml_name(name);
  if (key.size() <= 1000) return indent + key + ": ";
  return indent + "? " + key + "\n" + indent + ": ";
}

std::string name_list(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + yaml_name(names[i]);
  return s + "]";
}

std::string int_list(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

// The switches of `f` as a flow mapping; `disabled` is written as given.
std::string fusion_switches(const FusionConfig& f, const std::vector<std::string>& disabled) {
  std::string s = "{";
  for (const FusionSwitch& w : kFusionSwitches) s += std::string(w.key) + ": " + flag(f.*w.member) + ", ";
  return s + "disabled: " + name_list(disabled) + "}";
}

}  // namespace

std::string config_yaml(const Config& c) {
  std::ostringstream y;
  y << "fusion:\n";
  for (const FusionSwitch& w : kFusionSwitches) y << "  " << w.key << ": " << flag(c.fusion.*w.member) << "\n";
  y << "  precision_check: " << precision_check_name(c.fusion.precision_check) << "\n"
    << "  disabled: " << name_list(c.fusion.disabled) << "\n"
    << "kernel:\n  reorder_for_coalesce: " << flag(c.kernel.reorder_for_coalesce) << "\n"
    << "batch_window_ms: " << number(c.batch_window_ms) << "\n"
    << "mem_reuse: " << flag(c.mem_reuse) << "\n"
    << "fold_constants: " << flag(c.fold_constants) << "\n"
    << "serve:\n"
    << "  default_class: " << yaml_name(c.serve.default_class) << "\n"
    << "  execution_contexts: " << c.serve.execution_contexts << "\n"
    << "  max_body_bytes: " << c.serve.max_body_bytes << "\n"
    << "  seq_bucket: " << c.serve.seq_bucket << "\n"
    << "  packing: " << flag(c.serve.packing) << "\n"
    << "  prebuild_plans: " << flag(c.serve.prebuild_plans) << "\n"
    << "  token_bucket: " << c.serve.token_bucket << "\n"
    << "  max_sequences: " << c.serve.max_sequences << "\n"
    << "  step_tokens: " << c.serve.step_tokens << "\n"
    << "  interrupt_steps: " << flag(c.serve.interrupt_steps) << "\n";
  if (c.serve.kv_cache_tokens > 0) y << "  kv_cache_tokens: " << c.serve.kv_cache_tokens << "\n";
  if (!c.serve.pad_values.empty()) {
    y << "  pad_values:\n";
    for (const auto& [name, v] : c.serve.pad_values) y << mapping_key(name, "    ") << number(v) << "\n";
  }
  y << "  classes:\n";
  for (const auto& [name, t] : c.serve.classes) {
    y << mapping_key(name, "    ") << "{batch_window_ms: " << number(t.batch_window_ms)
      << ", adaptive_window: " << flag(t.adaptive_window) << ", max_batch: " << t.max_batch;
    if (!t.preferred_batch_sizes.empty()) y << ", preferred_batch_sizes: " << int_list(t.preferred_batch_sizes);
    y << ", priority: " << t.priority << ", timeout_ms: " << number(t.timeout_ms) << ", max_queue_size: " << t.max_queue_size
      << ", max_batch_tokens: " << t.max_batch_tokens;
    if (t.max_running > 0) y << ", max_running: " << t.max_running;
    if (t.prefill_chunk > 0) y << ", prefill_chunk: " << t.prefill_chunk;
    if (t.prefill_chunk_contended > 0) y << ", prefill_chunk_contended: " << t.prefill_chunk_contended;
    if (t.ttft_target_ms > 0) y << ", ttft_target_ms: " << number(t.ttft_target_ms);
    if (t.itl_target_ms > 0) y << ", itl_target_ms: " << number(t.itl_target_ms);
    y << "}\n";
  }
  if (!c.serve.matrix.empty()) {
    y << "  matrix:\n";
    for (const MatrixEntry& e : c.serve.matrix) {
      // A row's disabled list joins the top-level one when read: write only its own names.
      std::vector<std::string> own;
      for (const auto& n : e.fusion.disabled)
        if (std::find(c.fusion.disabled.begin(), c.fusion.disabled.end(), n) == c.fusion.disabled.end()) own.push_back(n);
      y << "    - {" << (e.max_tokens > 0 ? "max_tokens: " + std::to_string(e.max_tokens) : "max_batch: " + std::to_string(e.max_batch))
        << ", fusion: " << fusion_switches(e.fusion, own) << "}\n";
    }
  }
  return y.str();
}

}  // namespace fusor
