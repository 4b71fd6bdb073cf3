// The fusion switch table (include/fusor/fusion_switches.h) drives every list of switches: the
// config parser and writer, the precision verdict's key, the server's session description,
// tune's options, the pass pipeline and the docs. Each test loops over the table, so a new row
// is covered without a new test line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fusor/check.h"
#include "fusor/config.h"
#include "kernels/ref/reference.h"
#include "passes/pipeline.h"
#include "serve/session_cache.h"
#include "tune/service_times.h"
#include "graph_builder.h"

namespace fusor {
namespace {

std::string key_of(const FusionSwitch& s) { return std::string(s.key); }

FusionConfig with_off(const FusionSwitch& s) {
  FusionConfig f;
  f.*s.member = false;
  return f;
}

std::string read_doc(const std::string& name) {
  std::ifstream in(std::filesystem::path(FUSOR_SOURCE_DIR) / "docs" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The table row of a markdown document that starts with `start`, or "".
std::string row_starting(const std::string& md, const std::string& start) {
  size_t at = md.find("\n" + start);
  if (at == std::string::npos) return "";
  return md.substr(at + 1, md.find('\n', at + 1) - at - 1);
}

std::vector<std::string> passes_of(const FusionSwitch& s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s.passes)};
  for (std::string p; in >> p;) out.push_back(p);
  return out;
}

TEST(FusionSwitches, KeysAndLabelsAreUniqueAndAllOnByDefault) {
  std::set<std::string> keys, labels;
  for (const FusionSwitch& s : kFusionSwitches) {
    EXPECT_TRUE(keys.insert(key_of(s)).second) << s.key;
    EXPECT_TRUE(labels.insert(std::string(s.label)).second) << s.label;
    EXPECT_TRUE(FusionConfig{}.*s.member) << s.key;
    EXPECT_FALSE(s.description.empty()) << s.key;
  }
  FusionConfig none;
  set_every_switch(none, false);
  for (const FusionSwitch& s : kFusionSwitches) EXPECT_FALSE(none.*s.member) << s.key;
  EXPECT_EQ(none.precision_check, PrecisionCheck::Strict);  // not a switch
}

TEST(FusionSwitches, EachParsesAloneAtTheTopAndPerBucketAndIsWrittenBack) {
  for (const FusionSwitch& s : kFusionSwitches) {
    SCOPED_TRACE(key_of(s));
    Config c = parse_config("fusion:\n  " + key_of(s) + ": false\n", "c.yaml");
    Config want;
    want.fusion = with_off(s);
    EXPECT_EQ(c, want);
    const std::string yaml = config_yaml(c);
    EXPECT_NE(yaml.find("\n  " + key_of(s) + ": false\n"), std::string::npos) << yaml;
    EXPECT_EQ(parse_config(yaml, "c.yaml"), c);
    Config m = parse_config("serve:\n  matrix:\n    - {max_batch: 1, fusion: {" + key_of(s) + ": false}}\n", "c.yaml");
    ASSERT_EQ(m.serve.matrix.size(), 1u);
    EXPECT_EQ(m.serve.matrix[0].fusion, with_off(s));
    EXPECT_NE(config_yaml(m).find(key_of(s) + ": false"), std::string::npos);
    EXPECT_EQ(parse_config(config_yaml(m), "c.yaml"), m);
  }
}

// Forgetting a switch in the verdict key would reuse a verdict checked with other switches.
TEST(FusionSwitches, EachChangesTheVerdictKeyAndTheSessionDescription) {
  std::set<std::string> keys = {verdict_config_key(FusionConfig{})};
  std::set<std::string> descriptions = {serve::describe_fusion(FusionConfig{})};
  for (const FusionSwitch& s : kFusionSwitches) {
    EXPECT_TRUE(keys.insert(verdict_config_key(with_off(s))).second) << s.key;
    const std::string d = serve::describe_fusion(with_off(s));
    EXPECT_NE(d.find(std::string(s.label) + "=0 "), std::string::npos) << d;
    EXPECT_TRUE(descriptions.insert(d).second) << s.key;
  }
}

TEST(FusionSwitches, TunesNoneOptionTurnsEverySwitchOff) {
  auto options = tune::fusion_options(FusionConfig{});
  ASSERT_FALSE(options.empty());
  ASSERT_EQ(options.back().name, "none");
  FusionConfig none;
  set_every_switch(none, false);
  EXPECT_EQ(options.back().fusion, none);
}

TEST(FusionSwitches, EveryPipelinePassHasASwitchAndEverySwitchRealPasses) {
  const std::vector<std::string> passes = fusion_pass_names();
  for (const std::string& p : passes) {
    size_t n = 0;
    for (const FusionSwitch& s : kFusionSwitches) n += switches_pass(s, p);
    EXPECT_GE(n, 1u) << "no switch turns pass " << p << " off";
  }
  for (const FusionSwitch& s : kFusionSwitches) {
    EXPECT_FALSE(passes_of(s).empty()) << s.key << " switches no pass";
    for (const std::string& p : passes_of(s))
      EXPECT_NE(std::find(passes.begin(), passes.end(), p), passes.end()) << s.key << ": " << p << " is no pipeline pass";
  }
  EXPECT_FALSE(switches_pass(kFusionSwitches[0], "fuse"));  // whole names only
}

// Query, key and value projections of one input x [2, 3, 8], each with its bias: the passes
// that made an item, in order, under `fusion`.
std::vector<std::string> passes_fusing_projections(const FusionConfig& fusion) {
  test::GraphBuilder b;
  int x = b.input("x");
  std::vector<int> outs;
  for (const char* n : {"q", "k", "v"}) {
    int mm = b.node(Op::MatMul, {x, b.constant(std::string("W") + n, Tensor(DType::Float32, {8, 8}))}, std::string("mm_") + n);
    outs.push_back(b.node(Op::Add, {mm, b.constant(std::string("b") + n, Tensor(DType::Float32, {8}))}, n));
  }
  auto g = b.finish(outs);
  std::vector<TensorType> types = {{DType::Float32, {2, 3, 8}}};
  std::vector<Tensor> frozen(1);
  std::vector<std::string> passes;
  for (const FusionItem& i : run_fusion_passes(*g, types, frozen, fusion, ref::evaluate).report.items) passes.push_back(i.pass);
  return passes;
}

// merge_projections refines fuse_gemm_epilogue: off, the projections keep their own bias
// epilogues; fuse_gemm_epilogue off turns both passes off, with or without the newer key.
TEST(FusionSwitches, MergeProjectionsHasItsOwnSwitchUnderTheGemmEpilogue) {
  using Passes = std::vector<std::string>;
  EXPECT_EQ(passes_fusing_projections(FusionConfig{}), Passes{"merge_projections"});
  FusionConfig no_merge;
  no_merge.merge_projections = false;
  EXPECT_EQ(passes_fusing_projections(no_merge), Passes(3, "fuse_gemm_epilogue"));
  FusionConfig no_gemm = parse_config("fusion: {fuse_gemm_epilogue: false}\n", "old.yaml").fusion;
  EXPECT_TRUE(no_gemm.merge_projections);
  EXPECT_EQ(passes_fusing_projections(no_gemm), Passes{});
}

// docs/config.md: every switch in the full file and in the key table, with its passes; the table
// lists no fusion key that is neither a switch nor precision_check or disabled.
TEST(FusionSwitches, ConfigDocsListEverySwitchWithItsPasses) {
  const std::string md = read_doc("config.md");
  ASSERT_FALSE(md.empty());
  for (const FusionSwitch& s : kFusionSwitches) {
    EXPECT_NE(md.find("\n  " + key_of(s) + ": true\n"), std::string::npos) << s.key << " is not in the full file";
    const std::string row = row_starting(md, "| `fusion." + key_of(s) + "` |");
    ASSERT_FALSE(row.empty()) << s.key << " has no row in the key table";
    for (const std::string& p : passes_of(s))
      EXPECT_NE(row.find("`" + p + "`"), std::string::npos) << "the row of " << s.key << " does not name pass " << p;
  }
  for (size_t at = md.find("\n| `fusion."); at != std::string::npos; at = md.find("\n| `fusion.", at + 1)) {
    const std::string key = md.substr(at + 11, md.find('`', at + 11) - at - 11);
    bool known = key == "precision_check" || key == "disabled";
    for (const FusionSwitch& s : kFusionSwitches) known = known || key == s.key;
    EXPECT_TRUE(known) << "docs/config.md lists fusion." << key << ", which is no switch";
  }
}

// docs/fusion.md: the pipeline table gives every pass with the switches that turn it off.
TEST(FusionSwitches, FusionDocsGiveEachPassItsSwitches) {
  const std::string md = read_doc("fusion.md");
  ASSERT_FALSE(md.empty());
  for (const FusionSwitch& s : kFusionSwitches)
    for (const std::string& p : passes_of(s)) {
      const std::string row = row_starting(md, "| `" + p + "` |");
      ASSERT_FALSE(row.empty()) << "docs/fusion.md has no row for pass " << p;
      EXPECT_NE(row.find("`fusion." + key_of(s) + "`"), std::string::npos) << "its row does not name fusion." << s.key;
    }
}

}  // namespace
}  // namespace fusor
