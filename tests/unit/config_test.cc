#include "fusor/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "fusor/error.h"

namespace fusor {
namespace {

// The message parse_config throws for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_config(text, "config.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Messages go to terminals and logs: one line of valid UTF-8, whatever bytes the file held.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

#define EXPECT_CONFIG_ERROR(text, message) EXPECT_EQ(error_of(text), message) << "for:\n" << (text)

TEST(Config, DefaultsMatchTheDocumentedFile) {
  Config c;
  EXPECT_TRUE(c.fusion.fuse_elemwise);
  EXPECT_TRUE(c.fusion.fuse_norm_act);
  EXPECT_TRUE(c.fusion.fuse_gemm_epilogue);
  EXPECT_TRUE(c.fusion.fuse_attention);
  EXPECT_TRUE(c.fusion.merge_projections);
  EXPECT_EQ(c.fusion.precision_check, PrecisionCheck::Strict);
  EXPECT_TRUE(c.fusion.disabled.empty());
  EXPECT_TRUE(c.kernel.reorder_for_coalesce);
  EXPECT_EQ(c.batch_window_ms, 8.0);
  EXPECT_TRUE(c.mem_reuse);
  EXPECT_TRUE(c.fold_constants);
}

TEST(Config, EmptyCommentOnlyAndNullDocumentsMeanDefaults) {
  for (const char* text : {"", "\n\n", "# nothing here\n", "---\n", "~\n", "fusion:\nkernel:\n",
                           "fusion:\n  # fuse_elemwise: false\n", "\xef\xbb\xbf"})
    EXPECT_EQ(parse_config(text, "c.yaml"), Config{}) << text;
}

TEST(Config, ProductionFileParses) {
  Config c = parse_config(
      "fusion:\n"
      "  fuse_elemwise: true\n"
      "  fuse_norm_act: true\n"
      "  precision_check: strict\n"
      "kernel:\n"
      "  reorder_for_coalesce: true\n"
      "batch_window_ms: 8\n"
      "mem_reuse: true\n",
      "c.yaml");
  EXPECT_EQ(c, Config{});
}

TEST(Config, EveryKeyParses) {
  Config c = parse_config(
      "# every key, none at its default\n"
      "fusion:\n"
      "  fuse_elemwise: false\n"
      "  fuse_norm_act: False\n"
      "  fuse_gemm_epilogue: FALSE\n"
      "  fuse_attention: false\n"
      "  merge_projections: false\n"
      "  precision_check: relaxed\n"
      "  disabled: [layer3.attention, layer0.ffn.bias_gelu]\n"
      "kernel: {reorder_for_coalesce: false}\n"
      "batch_window_ms: 2.5\n"
      "mem_reuse: false\n"
      "fold_constants: false\n",
      "c.yaml");
  EXPECT_FALSE(c.fusion.fuse_elemwise);
  EXPECT_FALSE(c.fusion.fuse_norm_act);
  EXPECT_FALSE(c.fusion.fuse_gemm_epilogue);
  EXPECT_FALSE(c.fusion.fuse_attention);
  EXPECT_FALSE(c.fusion.merge_projections);
  EXPECT_EQ(c.fusion.precision_check, PrecisionCheck::Relaxed);
  EXPECT_EQ(c.fusion.disabled, (std::vector<std::string>{"layer3.attention", "layer0.ffn.bias_gelu"}));
  EXPECT_FALSE(c.kernel.reorder_for_coalesce);
  EXPECT_EQ(c.batch_window_ms, 2.5);
  EXPECT_FALSE(c.mem_reuse);
  EXPECT_FALSE(c.fold_constants);
}

TEST(Config, ValueForms) {
  // "off" is a boolean in YAML 1.1, but here it is just the precision_check value.
  EXPECT_EQ(parse_config("fusion: {precision_check: off}", "c").fusion.precision_check, PrecisionCheck::Off);
  EXPECT_EQ(parse_config("fusion: {precision_check: \"relaxed\"}", "c").fusion.precision_check,
            PrecisionCheck::Relaxed);
  EXPECT_EQ(parse_config("batch_window_ms: 0", "c").batch_window_ms, 0.0);
  EXPECT_EQ(parse_config("batch_window_ms: 1e3", "c").batch_window_ms, 1000.0);
  EXPECT_EQ(parse_config("batch_window_ms: 0.25", "c").batch_window_ms, 0.25);
  EXPECT_EQ(parse_config("fusion:\n  disabled:\n    - a.b\n    - \"c/d:0\"\n", "c").fusion.disabled,
            (std::vector<std::string>{"a.b", "c/d:0"}));
  EXPECT_STREQ(precision_check_name(PrecisionCheck::Off), "off");
}

TEST(Config, UnknownKeysNameThePathAndLine) {
  EXPECT_CONFIG_ERROR("fusion:\n  fuse_elemwize: true\n",
                      "config.yaml:2:3: unknown key 'fusion.fuse_elemwize' (did you mean 'fuse_elemwise'?)");
  EXPECT_CONFIG_ERROR("mem_reuse: true\nfuse_elemwise: false\n",
                      "config.yaml:2:1: unknown key 'fuse_elemwise' (did you mean 'fusion.fuse_elemwise'?)");
  EXPECT_CONFIG_ERROR("kernel:\n  reorder: true\n", "config.yaml:2:3: unknown key 'kernel.reorder'");
  EXPECT_CONFIG_ERROR("\n\nthreads: 4\n", "config.yaml:3:1: unknown key 'threads'");
  EXPECT_CONFIG_ERROR("batch_windows_ms: 4\n",
                      "config.yaml:1:1: unknown key 'batch_windows_ms' (did you mean 'batch_window_ms'?)");
  EXPECT_CONFIG_ERROR("[a]: 1\n", "config.yaml:1:1: keys must be names, got a list");
}

TEST(Config, BadValuesNameThePathLineAndColumn) {
  EXPECT_CONFIG_ERROR("fusion:\n  fuse_elemwise: \n  fuse_norm_act: maybe\n",
                      "config.yaml:2:3: 'fusion.fuse_elemwise' must be true or false, got nothing");
  EXPECT_CONFIG_ERROR("fusion:\n  fuse_norm_act: maybe\n",
                      "config.yaml:2:18: 'fusion.fuse_norm_act' must be true or false, got 'maybe'");
  EXPECT_CONFIG_ERROR("mem_reuse: yes\n", "config.yaml:1:12: 'mem_reuse' must be true or false, got 'yes'");
  EXPECT_CONFIG_ERROR("mem_reuse: \"true\"\n",
                      "config.yaml:1:12: 'mem_reuse' must be true or false, got 'true' "
                      "(quoted or tagged, so a string)");
  EXPECT_CONFIG_ERROR("fold_constants: [true]\n",
                      "config.yaml:1:17: 'fold_constants' must be true or false, got a list");
  EXPECT_CONFIG_ERROR("mem_reuse: true\n\n\n\n\n\nbatch_window_ms: soon\n",
                      "config.yaml:7:18: 'batch_window_ms' must be a non-negative number of at most 86400000 (24 hours), got 'soon'");
  for (const char* bad : {"-1", "-0.5", ".inf", "nan", "inf", "1e999", "0x10", "8ms", "true"})
    EXPECT_CONFIG_ERROR(std::string("batch_window_ms: ") + bad,
                        std::string("config.yaml:1:18: 'batch_window_ms' must be a non-negative number of at most 86400000 (24 hours), got '") +
                            bad + "'");
  EXPECT_CONFIG_ERROR("fusion:\n  precision_check: loose\n",
                      "config.yaml:2:20: 'fusion.precision_check' must be one of strict, relaxed, off, got 'loose'");
  EXPECT_CONFIG_ERROR("fusion:\n  disabled: layer3.attention\n",
                      "config.yaml:2:13: 'fusion.disabled' must be a list of fusion item names, "
                      "got 'layer3.attention'");
  EXPECT_CONFIG_ERROR("fusion:\n  disabled: [a, {b: 1}]\n",
                      "config.yaml:2:17: 'fusion.disabled' must list fusion item names, got a mapping");
  EXPECT_CONFIG_ERROR("fusion:\n  disabled: [a, \"b c\"]\n",
                      "config.yaml:2:17: 'fusion.disabled': fusion item name 'b c' contains whitespace");
  EXPECT_CONFIG_ERROR("fusion:\n  disabled:\n    - a\n    - a\n",
                      "config.yaml:4:7: 'fusion.disabled' lists 'a' twice (first at line 3)");
  EXPECT_CONFIG_ERROR("fusion: true\n", "config.yaml:1:9: 'fusion' must be a mapping of keys, got 'true'");
  EXPECT_CONFIG_ERROR("kernel: [reorder_for_coalesce]\n",
                      "config.yaml:1:9: 'kernel' must be a mapping of keys, got a list");
}

TEST(Config, DuplicateKeys) {
  EXPECT_CONFIG_ERROR("mem_reuse: true\nbatch_window_ms: 4\nmem_reuse: false\n",
                      "config.yaml:3:1: duplicate key 'mem_reuse' (first at line 1)");
  EXPECT_CONFIG_ERROR("fusion:\n  fuse_attention: true\n  fuse_attention: true\n",
                      "config.yaml:3:3: duplicate key 'fusion.fuse_attention' (first at line 2)");
  EXPECT_CONFIG_ERROR("fusion: {}\nfusion: {}\n", "config.yaml:2:1: duplicate key 'fusion' (first at line 1)");
}

TEST(Config, TopLevelMustBeOneMapping) {
  EXPECT_CONFIG_ERROR("- mem_reuse: true\n",
                      "config.yaml:1:1: the top level must be a mapping of keys (fusion, kernel, batch_window_ms, "
                      "mem_reuse, fold_constants, serve), got a list");
  EXPECT_CONFIG_ERROR("just text\n",
                      "config.yaml:1:1: the top level must be a mapping of keys (fusion, kernel, batch_window_ms, "
                      "mem_reuse, fold_constants, serve), got 'just text'");
  EXPECT_CONFIG_ERROR("mem_reuse: true\n---\nmem_reuse: false\n",
                      "config.yaml:2:1: the config must be one YAML document; a second one starts here");
  // yaml-cpp 0.7 loops forever on a stray ',' at block level (jbeder/yaml-cpp#1040).
  EXPECT_CONFIG_ERROR(",\n", "config.yaml:1:1: YAML syntax error: unexpected ','");
  EXPECT_CONFIG_ERROR("[a]\n,\n", "config.yaml:2:1: YAML syntax error: unexpected ','");
}

TEST(Config, SyntaxErrorsGiveTheirLine) {
  std::string e = error_of("fusion:\n  fuse_elemwise: true\n  disabled: [a, b\n");
  EXPECT_EQ(e.rfind("config.yaml:4:", 0), 0u) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
  e = error_of("fusion:\n  fuse_elemwise: true\n\tfuse_norm_act: true\n");
  EXPECT_EQ(e.rfind("config.yaml:3:", 0), 0u) << e;
  e = error_of("mem_reuse: \"true\n");
  EXPECT_EQ(e.rfind("config.yaml:", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = error_of(std::string("fusion: [\x00\xff{,\n", 15));  // yaml-cpp quotes the bad byte; the message escapes it
  EXPECT_EQ(e, "config.yaml:1:12: YAML syntax error: unknown escape character: \\xff");
  EXPECT_EQ(error_of("f\xc3\xbcsion: {}\n"), "config.yaml:1:1: unknown key 'f\xc3\xbcsion' (did you mean 'fusion'?)");
  e = error_of(std::string(5000, '['));
  EXPECT_NE(e.find("too deep"), std::string::npos) << e;
}

TEST(Config, LoadConfigReadsFilesAndNamesThem) {
  auto dir = std::filesystem::temp_directory_path() / ("fusor_config_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "c.yaml").string();
  std::ofstream(path) << "mem_reuse: false\nfusion:\n  fuse_attention: nope\n";
  try {
    load_config(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ":3:19: 'fusion.fuse_attention' must be true or false, got 'nope'");
  }
  std::ofstream(path) << "mem_reuse: false\n";
  EXPECT_FALSE(load_config(path).mem_reuse);
  EXPECT_THROW(load_config((dir / "missing.yaml").string()), Error);
  EXPECT_THROW(load_config(dir.string()), Error);
  std::ofstream(path) << std::string((1 << 20) + 1, '#');
  EXPECT_THROW(load_config(path), Error);
  std::filesystem::remove_all(dir);
}

// config_yaml writes every key, the fusion switches in their table's order; a serve.matrix row
// writes every switch too, and only its own disabled names.
TEST(Config, WrittenFileHasEveryKey) {
  Config c;
  EXPECT_EQ(config_yaml(c),
            "fusion:\n"
            "  fuse_elemwise: true\n"
            "  fuse_norm_act: true\n"
            "  fuse_gemm_epilogue: true\n"
            "  fuse_attention: true\n"
            "  merge_projections: true\n"
            "  fuse_quantized: true\n"
            "  fuse_rotary: true\n"
            "  precision_check: strict\n"
            "  disabled: []\n"
            "kernel:\n"
            "  reorder_for_coalesce: true\n"
            "batch_window_ms: 8\n"
            "mem_reuse: true\n"
            "fold_constants: true\n"
            "serve:\n"
            "  default_class: default\n"
            "  execution_contexts: 1\n"
            "  max_body_bytes: 67108864\n"
            "  seq_bucket: 16\n"
            "  packing: true\n"
            "  prebuild_plans: true\n"
            "  token_bucket: 16\n"
            "  max_sequences: 32\n"
            "  step_tokens: 256\n"
            "  interrupt_steps: true\n"
            "  classes:\n"
            "    default: {batch_window_ms: 8, adaptive_window: true, max_batch: 8, priority: 0, timeout_ms: 30000, "
            "max_queue_size: 256, max_batch_tokens: 2048}\n");
  c.fusion.disabled = {"a"};
  FusionConfig row = c.fusion;
  row.fuse_attention = false;
  row.disabled.push_back("b");
  c.serve.matrix = {{1, row}};
  c.serve.classes["default"].adaptive_window = false;
  const std::string yaml = config_yaml(c);
  EXPECT_NE(yaml.find("\n  matrix:\n    - {max_batch: 1, fusion: {fuse_elemwise: true, fuse_norm_act: true, "
                      "fuse_gemm_epilogue: true, fuse_attention: false, merge_projections: true, fuse_quantized: true, "
                      "fuse_rotary: true, disabled: [b]}}\n"),
            std::string::npos)
      << yaml;
  EXPECT_EQ(parse_config(yaml, "c.yaml"), c);
}

// Names that plain YAML would split or cut (an input "input:0", a class "x,y") are written quoted
// and read back byte for byte: config_fuzz found pad_values keys with NUL and 0xff bytes, and
// keys past YAML's 1024-character limit on an implicit key.
TEST(Config, NamesWithYamlSyntaxRoundTrip) {
  Config c;
  c.serve.pad_values = {{"input:0", 1}, {"a b", 2}, {"q\"\\", 3}, {std::string("n\0\xff#", 4), 4}, {"-x", 5},
                        {std::string(400, '\x1c'), 6}, {std::string(1100, 'k'), 7}};
  c.serve.classes["x,y"] = c.serve.classes["default"];
  c.serve.classes[std::string(1500, 'c')] = c.serve.classes["default"];
  c.fusion.disabled = {"a,b", "[c]"};
  const std::string yaml = config_yaml(c);
  EXPECT_EQ(parse_config(yaml, "c.yaml"), c) << yaml;
}

// Names that plain YAML reads as null, a boolean or a number are written quoted: `fusor tune --slo
// 'null:p99=500ms' -o x.yaml` wrote a class `null:` that the reader saw as no name at all.
TEST(Config, NamesThatReadAsNullBooleansOrNumbersRoundTrip) {
  const std::vector<std::string> names = {"null", "Null", "NULL", "~",   "true", "False", "TRUE", "yes", "No",  "ON",
                                          "off",  "y",    "N",    "12",  "1e3", ".5",    ".inf", ".NaN", "0x1f", "+1"};
  for (const std::string& name : names) {
    Config c;
    c.serve.classes = {{name, {}}};
    c.serve.default_class = name;
    c.serve.pad_values = {{name, 1}};
    c.fusion.disabled = {name};
    const std::string yaml = config_yaml(c);
    std::string error;
    try {
      EXPECT_EQ(parse_config(yaml, "c.yaml"), c) << yaml;
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_EQ(error, "") << "for the name " << name << ":\n" << yaml;
  }
  EXPECT_CONFIG_ERROR("serve:\n  classes: {null: {}}\n",
                      "config.yaml:2:13: 'serve.classes' must be a class name, got null (nothing, ~ or null; quote a "
                      "name spelled null: \"null\")");
}

// The reference in docs/config.md shows the full file with every default; it must parse to Config{}.
TEST(Config, DocumentedExampleParsesToTheDefaults) {
  auto doc = std::filesystem::path(FUSOR_SOURCE_DIR) / "docs/config.md";
  std::ifstream in(doc);
  ASSERT_TRUE(in) << doc;
  std::stringstream s;
  s << in.rdbuf();
  std::string md = s.str();
  auto start = md.find("```yaml\n");
  ASSERT_NE(start, std::string::npos);
  start += 8;
  auto end = md.find("```", start);
  EXPECT_EQ(parse_config(md.substr(start, end - start), "docs/config.md"), Config{});
}

// Truncations and byte mutations of a valid file, and hostile YAML: each either parses or
// throws fusor::Error; never another exception, never a crash or a hang.
TEST(Config, GarbageNeverEscapesAsAnythingButError) {
  const std::string valid =
      "fusion:\n  fuse_elemwise: true\n  precision_check: relaxed\n  disabled: [layer3.attention, \"a.b\"]\n"
      "kernel: {reorder_for_coalesce: false}\nbatch_window_ms: 8.5\nmem_reuse: true\nfold_constants: false\n";
  std::vector<std::string> inputs;
  for (size_t n = 0; n <= valid.size(); ++n) inputs.push_back(valid.substr(0, n));
  std::mt19937 rng(42);
  const std::string alphabet = "{}[]:,-?&*!|>'\"#%@`\t\n \\\x00\xff\xfe.0a~";
  for (int i = 0; i < 1500; ++i) {
    std::string s = valid;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % s.size();
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: s[at] = c; break;
        case 1: s.insert(s.begin() + static_cast<long>(at), c); break;
        default: s.erase(at, 1 + rng() % 8);
      }
      if (s.empty()) s = "x";
    }
    inputs.push_back(s);
  }
  for (int i = 0; i < 200; ++i) {
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    inputs.push_back(s);
  }
  inputs.insert(inputs.end(),
                {std::string(100000, '['), std::string(100000, '{'), "a: &x [*x]\n", "fusion: &x {disabled: *x}\n",
                 "fusion:\n  disabled: &x [*x]\n", "*unknown\n", "&a a: 1\n", "? ? ? ? x\n", "!!binary x: 1\n",
                 "mem_reuse: !!bool true\n", "<<: {mem_reuse: false}\n", std::string("mem_reuse: \0true", 16),
                 "\xff\xfe\x00\x00", "\x00\x00\xfe\xff", "%YAML 1.2\n---\nmem_reuse: true\n", "%BOGUS\n",
                 "mem_reuse: |\n  true\n", "batch_window_ms: 99999999999999999999999999999999999999\n",
                 std::string(70000, 'a') + ": 1\n", "fusion:\n  " + std::string(300, 'z') + ": 1\n"});
  std::string deep;
  for (int i = 0; i < 2000; ++i) deep += "- ";
  inputs.push_back(deep + "x\n");
  for (const std::string& s : inputs) {
    try {
      parse_config(s, "fuzz.yaml");
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("fuzz.yaml", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_TRUE(valid_utf8(m)) << m;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-fusor exception " << e.what() << " for input of " << s.size() << " bytes";
    } catch (...) {
      ADD_FAILURE() << "unknown exception for input of " << s.size() << " bytes";
    }
  }
}

TEST(Config, ServeSectionParses) {
  Config c = parse_config(
      "batch_window_ms: 3\n"
      "serve:\n"
      "  default_class: interactive\n"
      "  execution_contexts: 2\n"
      "  max_body_bytes: 4096\n"
      "  seq_bucket: 8\n"
      "  pad_values: {input_ids: 0, attention_mask: 0, token_type_ids: 1}\n"
      "  classes:\n"
      "    interactive: {batch_window_ms: 1, max_batch: 4, preferred_batch_sizes: [1, 2, 4], priority: 0,\n"
      "                  timeout_ms: 1000, max_queue_size: 64}\n"
      "    batch: {max_batch: 32, priority: 1, adaptive_window: false}\n",
      "c.yaml");
  EXPECT_EQ(c.serve.default_class, "interactive");
  EXPECT_EQ(c.serve.execution_contexts, 2);
  EXPECT_EQ(c.serve.max_body_bytes, 4096);
  EXPECT_EQ(c.serve.seq_bucket, 8);
  EXPECT_EQ(c.serve.pad_values.at("token_type_ids"), 1.0);
  const TrafficClass& i = c.serve.classes.at("interactive");
  EXPECT_EQ(i.batch_window_ms, 1.0);
  EXPECT_EQ(i.preferred_batch_sizes, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(i.timeout_ms, 1000.0);
  EXPECT_EQ(i.max_queue_size, 64);
  EXPECT_EQ(c.serve.classes.at("batch").batch_window_ms, 3.0);  // the top-level window
  EXPECT_EQ(c.serve.classes.at("batch").max_batch, 32);
  EXPECT_TRUE(i.adaptive_window);  // the default
  EXPECT_FALSE(c.serve.classes.at("batch").adaptive_window);
  // Without classes: one "default" class with the top-level window.
  EXPECT_EQ(parse_config("batch_window_ms: 2\n", "c.yaml").serve.classes.at("default").batch_window_ms, 2.0);
}

TEST(Config, ServeSectionErrorsNameTheKey) {
  EXPECT_CONFIG_ERROR("serve:\n  default_class: bulk\n",
                      "config.yaml:2:18: 'serve.default_class' is 'bulk', which is not in serve.classes (default)");
  EXPECT_CONFIG_ERROR("serve:\n  seq_bucket: 0\n", "config.yaml:2:15: 'serve.seq_bucket' must be a positive integer of at most 1048576, got '0'");
  // A thread per context: 100000 of them aborted the server as it started.
  EXPECT_CONFIG_ERROR("serve:\n  execution_contexts: 100000\n",
                      "config.yaml:2:23: 'serve.execution_contexts' must be a positive integer of at most 1024, got '100000'");
  EXPECT_EQ(parse_config("serve:\n  execution_contexts: 1024\n", "c.yaml").serve.execution_contexts, kMaxExecutionContexts);
  EXPECT_CONFIG_ERROR("serve:\n  classes: {a: {max_batch: 2, preferred_batch_sizes: [1, 4]}}\n",
                      "config.yaml:2:54: 'serve.classes.a.preferred_batch_sizes' must not exceed max_batch (2)");
  EXPECT_CONFIG_ERROR("serve:\n  classes: {a: {max_bacth: 2}}\n",
                      "config.yaml:2:17: unknown key 'serve.classes.a.max_bacth' (did you mean 'max_batch'?)");
  EXPECT_CONFIG_ERROR("serve:\n  classes: {a: {adaptive_window: yes}}\n",
                      "config.yaml:2:34: 'serve.classes.a.adaptive_window' must be true or false, got 'yes'");
  EXPECT_CONFIG_ERROR("serve:\n  classes: {a: {priority: -1}}\n",
                      "config.yaml:2:27: 'serve.classes.a.priority' must be a non-negative integer, got '-1'");
  EXPECT_CONFIG_ERROR("serve:\n  classes: {}\n",
                      "config.yaml:2:12: 'serve.classes' must be a non-empty mapping of class name to settings, got a mapping");
  EXPECT_CONFIG_ERROR("serve:\n  pad_values: {input_ids: x}\n",
                      "config.yaml:2:27: 'serve.pad_values.input_ids' must be a number, got 'x'");
}

// Durations and counts accepted here must not overflow where the server uses them: a timeout_ms
// of 1e13 overflowed the batcher's deadline (a core spun), a window of 9.3e12 ms the clock's
// duration (ignored), step_tokens near INT64_MAX a doubling loop (served forever).
TEST(Config, DurationsAndCountsHaveUpperBounds) {
  const std::string ms = "must be a non-negative number of at most 86400000 (24 hours), got '86400000.5'";
  EXPECT_CONFIG_ERROR("batch_window_ms: 86400000.5\n", "config.yaml:1:18: 'batch_window_ms' " + ms);
  for (const char* key : {"batch_window_ms", "timeout_ms", "ttft_target_ms", "itl_target_ms"}) {
    const std::string head = std::string("serve:\n  classes: {default: {") + key + ": ";
    EXPECT_CONFIG_ERROR(head + "86400000.5}}\n", "config.yaml:2:" + std::to_string(head.size() - 7 + 1) +
                                                    ": 'serve.classes.default." + key + "' " + ms);
    EXPECT_EQ(error_of(head + "86400000}}\n"), "") << key;
    EXPECT_NE(error_of(head + "1e13}}\n"), "") << key;
  }
  const std::string big = "1048577";
  for (const char* key : {"seq_bucket", "token_bucket", "max_sequences", "step_tokens", "kv_cache_tokens"}) {
    const std::string head = std::string("serve:\n  ") + key + ": ";
    EXPECT_CONFIG_ERROR(head + big + "\n", "config.yaml:2:" + std::to_string(head.size() - 7 + 1) + ": 'serve." + key +
                                              "' must be a positive integer of at most 1048576, got '" + big + "'");
    EXPECT_EQ(error_of(head + "1048576\n"), "") << key;
    EXPECT_NE(error_of(head + "9223372036854775807\n"), "") << key;
  }
  for (const char* key : {"max_batch", "max_queue_size", "max_batch_tokens", "max_running", "prefill_chunk",
                          "prefill_chunk_contended"}) {
    const std::string head = std::string("serve:\n  classes: {default: {") + key + ": ";
    EXPECT_NE(error_of(head + big + "}}\n").find("'serve.classes.default." + std::string(key) + "' must be a "),
              std::string::npos) << key;
    EXPECT_NE(error_of(head + big + "}}\n").find("integer of at most 1048576, got '1048577'"), std::string::npos) << key;
    EXPECT_EQ(error_of(head + "1048576}}\n"), "") << key;
  }
  EXPECT_CONFIG_ERROR("serve:\n  classes: {default: {max_batch: 4, preferred_batch_sizes: [1, 1048577]}}\n",
                      "config.yaml:2:64: 'serve.classes.default.preferred_batch_sizes' must be a positive integer of at "
                      "most 1048576, got '1048577'");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_tokens: 1048577}\n",
                      "config.yaml:3:20: 'serve.matrix[0].max_tokens' must be a positive integer of at most 1048576, "
                      "got '1048577'");
}

TEST(Config, ServeMatrixResolvesOverTheTopLevelFusion) {
  // The top-level fusion section comes after the matrix on purpose: entries resolve over it anyway.
  Config c = parse_config(
      "serve:\n"
      "  matrix:\n"
      "    - {max_batch: 1, fusion: {fuse_attention: false}}\n"
      "    - {max_batch: 32, fusion: {fuse_gemm_epilogue: true, disabled: [layer0.attention.self.qkv, a]}}\n"
      "    - max_batch: 64\n"
      "fusion:\n"
      "  fuse_gemm_epilogue: false\n"
      "  precision_check: relaxed\n"
      "  disabled: [a]\n",
      "c.yaml");
  ASSERT_EQ(c.serve.matrix.size(), 3u);
  FusionConfig top = c.fusion;
  EXPECT_FALSE(top.fuse_gemm_epilogue);
  FusionConfig one = top;
  one.fuse_attention = false;
  EXPECT_EQ(c.serve.matrix[0], (MatrixEntry{1, one}));
  FusionConfig two = top;
  two.fuse_gemm_epilogue = true;
  two.disabled = {"a", "layer0.attention.self.qkv"};  // joins the top-level list, each name once
  EXPECT_EQ(c.serve.matrix[1], (MatrixEntry{32, two}));
  EXPECT_EQ(c.serve.matrix[2], (MatrixEntry{64, top}));  // no fusion key: the top level's
  EXPECT_EQ(c.serve.matrix[1].fusion.precision_check, PrecisionCheck::Relaxed);
  EXPECT_TRUE(parse_config("serve:\n  matrix: []\n", "c.yaml").serve.matrix.empty());
  // Token rows (packed plans) ascend on their own beside batch rows, and are written back as such.
  Config t = parse_config("serve:\n  matrix:\n    - {max_batch: 8}\n    - {max_tokens: 256, fusion: {fuse_elemwise: false}}\n"
                          "    - {max_tokens: 4096}\n", "c.yaml");
  ASSERT_EQ(t.serve.matrix.size(), 3u);
  EXPECT_EQ(t.serve.matrix[1].max_tokens, 256);
  EXPECT_FALSE(t.serve.matrix[1].fusion.fuse_elemwise);
  EXPECT_EQ(parse_config(config_yaml(t), "c.yaml"), t);
  EXPECT_TRUE(parse_config("", "c.yaml").serve.matrix.empty());
}

TEST(Config, ServeMatrixErrorsNameTheEntryAndKey) {
  EXPECT_CONFIG_ERROR("serve:\n  matrix: {max_batch: 1}\n",
                      "config.yaml:2:11: 'serve.matrix' must be a list of {max_batch, fusion} entries, got a mapping");
  EXPECT_CONFIG_ERROR("serve:\n  matrix: [3]\n",
                      "config.yaml:2:12: 'serve.matrix[0]' must be a mapping with max_batch and fusion, got '3'");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {fusion: {fuse_attention: false}}\n",
                      "config.yaml:3:7: 'serve.matrix[0]' needs max_batch (the largest batch this entry applies to) "
                      "or max_tokens");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 2, max_tokens: 64}\n",
                      "config.yaml:3:22: 'serve.matrix[0]' has both max_batch and max_tokens; give one");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_tokens: 512}\n    - {max_batch: 4}\n    - {max_tokens: 256}\n",
                      "config.yaml:5:20: 'serve.matrix[2].max_tokens' must be greater than the previous entry's (512): "
                      "entries are token buckets in ascending order");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 0}\n",
                      "config.yaml:3:19: 'serve.matrix[0].max_batch' must be a positive integer of at most 1048576, got '0'");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: \"4\"}\n",
                      "config.yaml:3:19: 'serve.matrix[0].max_batch' must be a positive integer of at most 1048576, got '4' (quoted or tagged, so a string)");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 8}\n    - {max_batch: 8}\n",
                      "config.yaml:4:19: 'serve.matrix[1].max_batch' must be greater than the previous entry's (8): "
                      "entries are batch-size buckets in ascending order");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 8}\n    - {max_batch: 2}\n",
                      "config.yaml:4:19: 'serve.matrix[1].max_batch' must be greater than the previous entry's (8): "
                      "entries are batch-size buckets in ascending order");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_bach: 8}\n",
                      "config.yaml:3:8: unknown key 'serve.matrix[0].max_bach' (did you mean 'max_batch'?)");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 1, max_batch: 2}\n",
                      "config.yaml:3:22: duplicate key 'serve.matrix[0].max_batch' (first at line 3)");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 1, fusion: {fuse_atention: false}}\n",
                      "config.yaml:3:31: unknown key 'serve.matrix[0].fusion.fuse_atention' (did you mean 'fuse_attention'?)");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 1, fusion: {fuse_attention: 0}}\n",
                      "config.yaml:3:47: 'serve.matrix[0].fusion.fuse_attention' must be true or false, got '0'");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 1, fusion: [fuse_attention]}\n",
                      "config.yaml:3:30: 'serve.matrix[0].fusion' must be a mapping of fusion keys, got a list");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 1, fusion: {disabled: [a, a]}}\n",
                      "config.yaml:3:45: 'serve.matrix[0].fusion.disabled' lists 'a' twice (first at line 3)");
  EXPECT_CONFIG_ERROR("serve:\n  matrix:\n    - {max_batch: 1, fusion: {precision_check: off}}\n",
                      "config.yaml:3:31: 'serve.matrix[0].fusion.precision_check' cannot be set per bucket: the "
                      "top-level fusion.precision_check applies to all");
}

// The generation scheduler's keys (docs/serve-generate.md) parse, check their ranges, and are
// written back so that a tuned file reads as it was written.
TEST(Config, GenerationKeysParseAndRoundTrip) {
  Config c = parse_config(
      "serve:\n  max_sequences: 16\n  step_tokens: 128\n  kv_cache_tokens: 2048\n  interrupt_steps: false\n"
      "  default_class: chat\n  classes:\n"
      "    chat: {priority: 0, ttft_target_ms: 150, itl_target_ms: 40.5}\n"
      "    bulk: {priority: 2, max_running: 4, prefill_chunk: 32, prefill_chunk_contended: 8}\n",
      "c.yaml");
  EXPECT_EQ(c.serve.max_sequences, 16);
  EXPECT_EQ(c.serve.step_tokens, 128);
  EXPECT_EQ(c.serve.kv_cache_tokens, 2048);
  EXPECT_FALSE(c.serve.interrupt_steps);
  EXPECT_EQ(c.serve.classes.at("chat").ttft_target_ms, 150);
  EXPECT_EQ(c.serve.classes.at("chat").itl_target_ms, 40.5);
  EXPECT_EQ(c.serve.classes.at("bulk").max_running, 4);
  EXPECT_EQ(c.serve.classes.at("bulk").prefill_chunk, 32);
  EXPECT_EQ(c.serve.classes.at("bulk").prefill_chunk_contended, 8);
  EXPECT_EQ(parse_config(config_yaml(c), "c.yaml"), c);
  EXPECT_CONFIG_ERROR("serve:\n  step_tokens: 0\n", "config.yaml:2:16: 'serve.step_tokens' must be a positive integer of at most 1048576, got '0'");
  EXPECT_CONFIG_ERROR("serve:\n  classes:\n    a: {prefill_chunk: -1}\n",
                      "config.yaml:3:24: 'serve.classes.a.prefill_chunk' must be a non-negative integer of at most 1048576, got '-1'");
  EXPECT_CONFIG_ERROR("serve:\n  classes:\n    a: {prefil_chunk: 8}\n",
                      "config.yaml:3:9: unknown key 'serve.classes.a.prefil_chunk' (did you mean 'prefill_chunk'?)");
}

}  // namespace
}  // namespace fusor
