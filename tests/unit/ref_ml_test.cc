// ml family (ir/op_rows_ml.h): TfIdfVectorizer and the ai.onnx.ml ops, on small hand-checked
// cases the node tests miss, the one-line errors for bad input, and which ai.onnx.ml ops the
// importer accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "onnx/op_support.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

Tensor modes(std::vector<uint8_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return test::tensor_of<uint8_t>({n}, std::move(v));
}

// Pool: unigram 5 (column 0) and bigram (5, 6) (column 1).
Node tfidf(int64_t min_gram, int64_t max_skip, const char* mode = "TF", std::vector<float> weights = {}) {
  std::map<std::string, Attribute> a{{"mode", std::string(mode)},
                                     {"min_gram_length", min_gram},
                                     {"max_gram_length", int64_t{2}},
                                     {"max_skip_count", max_skip},
                                     {"pool_int64s", std::vector<int64_t>{5, 5, 6}},
                                     {"ngram_counts", std::vector<int64_t>{0, 1}},
                                     {"ngram_indexes", std::vector<int64_t>{0, 1}}};
  if (!weights.empty()) a["weights"] = weights;
  return make_node("TfIdfVectorizer", 9, a);
}

TEST(RefMl, TfIdfCountsBigramsAcrossSkipsAndUnigramsOnce) {
  const Tensor x = make_i64({6}, {5, 6, 9, 6, 5, 6});
  // Adjacent (5, 6) twice; distance 2 adds none; distance 3 adds (x0, x3). Unigram 5: twice, at any skip.
  EXPECT_EQ(values<float>(run(tfidf(1, 0), {x})[0]), (std::vector<float>{2, 2}));
  EXPECT_EQ(values<float>(run(tfidf(1, 1), {x})[0]), (std::vector<float>{2, 2}));
  EXPECT_EQ(values<float>(run(tfidf(1, 2), {x})[0]), (std::vector<float>{2, 3}));
  EXPECT_EQ(values<float>(run(tfidf(2, 2), {x})[0]), (std::vector<float>{0, 3}));
  // Any skip: distance 5 adds (x0, x5) too; a skip far past the row's width does not loop for long.
  EXPECT_EQ(values<float>(run(tfidf(1, int64_t{1} << 40), {x})[0]), (std::vector<float>{2, 4}));
}

TEST(RefMl, TfIdfWeightsAndBatches) {
  const Tensor x = make_i64({6}, {5, 6, 9, 6, 5, 6});
  EXPECT_EQ(values<float>(run(tfidf(1, 2, "IDF", {0.5f, 2}), {x})[0]), (std::vector<float>{0.5f, 2}));
  EXPECT_EQ(values<float>(run(tfidf(1, 2, "TFIDF", {0.5f, 2}), {x})[0]), (std::vector<float>{1, 6}));
  EXPECT_EQ(values<float>(run(tfidf(1, 2, "IDF"), {x})[0]), (std::vector<float>{1, 1}));
  const Tensor batch = test::tensor_of<int32_t>({2, 3}, {5, 6, 5, 9, 9, 9});
  auto out = run(tfidf(1, 0), {batch})[0];
  EXPECT_EQ(out.dims(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{2, 1, 0, 0}));
}

TEST(RefMl, TfIdfBadAttributesNameTheNode) {
  Node n = tfidf(1, 0);
  n.attrs["ngram_indexes"] = std::vector<int64_t>{0};
  EXPECT_TRUE(contains(error_of(n, {make_i64({2}, {5, 6})}), "ngram_indexes has 1 entries"));
  n = tfidf(1, 0);
  n.attrs["ngram_counts"] = std::vector<int64_t>{0, 2};  // one unigram... then half a bigram
  EXPECT_TRUE(contains(error_of(n, {make_i64({2}, {5, 6})}), "not whole 2-grams"));
  n = tfidf(1, 0, "BM25");
  EXPECT_TRUE(contains(error_of(n, {make_i64({2}, {5, 6})}), "mode must be"));
}

// Two one-node trees on feature 0. Tree A: x <= 1 ? leaf 0 (target 0, weight 1) : leaf 1
// (target 0, weight 4). Tree B: x <= 2 ? leaf 2 (target 0, weight 3) : leaf 3 (target 1, weight 10).
Node two_trees(int64_t aggregate, int64_t post = 0) {
  return make_node("TreeEnsemble", 5,
                   {{"aggregate_function", aggregate},
                    {"post_transform", post},
                    {"n_targets", int64_t{2}},
                    {"tree_roots", std::vector<int64_t>{0, 1}},
                    {"nodes_splits", floats({1, 2})},
                    {"nodes_modes", modes({0, 0})},
                    {"nodes_featureids", std::vector<int64_t>{0, 0}},
                    {"nodes_truenodeids", std::vector<int64_t>{0, 2}},
                    {"nodes_falsenodeids", std::vector<int64_t>{1, 3}},
                    {"nodes_trueleafs", std::vector<int64_t>{1, 1}},
                    {"nodes_falseleafs", std::vector<int64_t>{1, 1}},
                    {"leaf_targetids", std::vector<int64_t>{0, 0, 0, 1}},
                    {"leaf_weights", floats({1, 4, 3, 10})}});
}

TEST(RefMl, TreeEnsembleAggregatesPerTarget) {
  const Tensor x = make({3, 1}, {0, 1.5f, 5});
  const float hi = std::numeric_limits<float>::max(), lo = std::numeric_limits<float>::lowest();
  EXPECT_EQ(values<float>(run(two_trees(1), {x})[0]), (std::vector<float>{4, 0, 7, 0, 4, 10}));       // SUM
  EXPECT_EQ(values<float>(run(two_trees(0), {x})[0]), (std::vector<float>{2, 0, 3.5f, 0, 2, 5}));     // AVERAGE
  EXPECT_EQ(values<float>(run(two_trees(2), {x})[0]), (std::vector<float>{1, hi, 3, hi, 4, 10}));     // MIN
  EXPECT_EQ(values<float>(run(two_trees(3), {x})[0]), (std::vector<float>{3, lo, 4, lo, 4, 10}));     // MAX
  auto logistic = values<float>(run(two_trees(1, 2), {x})[0]);
  EXPECT_NEAR(logistic[0], 1 / (1 + std::exp(-4.0)), 1e-6);
  EXPECT_NEAR(logistic[1], 0.5, 1e-6);
  auto softmax = values<float>(run(two_trees(1, 1), {x})[0]);
  EXPECT_NEAR(softmax[4] + softmax[5], 1, 1e-6);
  EXPECT_NEAR(softmax[5], 1 / (1 + std::exp(-6.0)), 1e-6);
  auto probit = values<float>(run(two_trees(0, 4), {make({1, 1}, {5})})[0]);  // AVERAGE: [2, 5]
  EXPECT_TRUE(std::isnan(probit[0]));  // outside [0, 1]
}

// One node: x in {2, 7} ? leaf 0 (weight 1) : leaf 1 (weight 2).
Node member_tree(bool missing_goes_true) {
  Node n = make_node("TreeEnsemble", 5,
                     {{"n_targets", int64_t{1}},
                      {"tree_roots", std::vector<int64_t>{0}},
                      {"nodes_splits", floats({0})},
                      {"nodes_modes", modes({6})},
                      {"membership_values", floats({7, 2, NAN})},
                      {"nodes_featureids", std::vector<int64_t>{1}},
                      {"nodes_truenodeids", std::vector<int64_t>{0}},
                      {"nodes_falsenodeids", std::vector<int64_t>{1}},
                      {"nodes_trueleafs", std::vector<int64_t>{1}},
                      {"nodes_falseleafs", std::vector<int64_t>{1}},
                      {"leaf_targetids", std::vector<int64_t>{0, 0}},
                      {"leaf_weights", floats({1, 2})}});
  if (missing_goes_true) n.attrs["nodes_missing_value_tracks_true"] = std::vector<int64_t>{1};
  return n;
}

TEST(RefMl, TreeEnsembleMembershipBranch) {
  const Tensor x = make({4, 2}, {0, 2, 0, 3, 0, 7, 0, NAN});
  EXPECT_EQ(values<float>(run(member_tree(false), {x})[0]), (std::vector<float>{1, 2, 1, 2}));
  EXPECT_EQ(values<float>(run(member_tree(true), {x})[0]), (std::vector<float>{1, 2, 1, 1}));
}

TEST(RefMl, TreeEnsembleBadAttributesNameTheNode) {
  const Tensor x = make({1, 2}, {0, 0});
  Node n = two_trees(1);
  n.attrs["nodes_featureids"] = std::vector<int64_t>{0};
  EXPECT_TRUE(contains(error_of(n, {x}), "'nodes_featureids' has 1 entries"));
  n = two_trees(1);
  n.attrs["leaf_targetids"] = std::vector<int64_t>{0, 0, 0};
  EXPECT_TRUE(contains(error_of(n, {x}), "'leaf_weights' has 4 entries"));
  n = two_trees(1);
  n.attrs["nodes_falsenodeids"] = std::vector<int64_t>{1, 4};
  EXPECT_TRUE(contains(error_of(n, {x}), "out of range [0, 4)"));
  n = two_trees(1);
  n.attrs["tree_roots"] = std::vector<int64_t>{0, 2};
  EXPECT_TRUE(contains(error_of(n, {x}), "tree root 2 is out of range"));
  n = two_trees(1);  // node 0's false branch goes to node 1, node 1's true branch back to node 0
  n.attrs["nodes_falseleafs"] = std::vector<int64_t>{0, 1};
  n.attrs["nodes_trueleafs"] = std::vector<int64_t>{1, 0};
  n.attrs["nodes_truenodeids"] = std::vector<int64_t>{0, 0};
  EXPECT_TRUE(contains(error_of(n, {x}), "cycle"));
  n = two_trees(1);
  n.attrs["nodes_featureids"] = std::vector<int64_t>{0, 2};
  EXPECT_TRUE(contains(error_of(n, {x}), "reads feature 2"));
  n = member_tree(false);
  n.attrs["membership_values"] = floats({7, 2});
  EXPECT_TRUE(contains(error_of(n, {x}), "NaN"));
}

TEST(RefMl, BinarizerAndArrayFeatureExtractor) {
  Node bin = make_node("Binarizer", 1, {{"threshold", 1.0f}});
  EXPECT_EQ(values<float>(run(bin, {floats({0.5f, 1, 1.5f, NAN})})[0]), (std::vector<float>{0, 0, 1, 0}));
  EXPECT_EQ(values<int64_t>(run(bin, {make_i64({3}, {0, 1, 2})})[0]), (std::vector<int64_t>{0, 0, 1}));

  Node afe = make_node("ArrayFeatureExtractor", 1);
  auto out = run(afe, {make({2, 3}, {0, 1, 2, 3, 4, 5}), make_i64({2}, {2, 0})})[0];
  EXPECT_EQ(out.dims(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{2, 0, 5, 3}));
  out = run(afe, {floats({0, 1, 2}), make_i64({1, 1}, {1})})[0];  // 1-D X: one row
  EXPECT_EQ(out.dims(), (Dims{1, 1}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{1}));
  EXPECT_TRUE(contains(error_of(afe, {floats({0, 1, 2}), make_i64({1}, {3})}), "index 3 is out of range [0, 3)"));
  EXPECT_TRUE(contains(error_of(afe, {floats({0, 1, 2}), make_i64({1}, {-1})}), "index -1 is out of range"));
}

TEST(RefMl, OnlyImplementedAiOnnxMlOpsAreSupported) {
  for (const char* op : {"TreeEnsemble", "Binarizer", "ArrayFeatureExtractor"}) {
    EXPECT_EQ(unsupported_reason("ai.onnx.ml", op), "") << op;
    EXPECT_NE(unsupported_reason("", op), "") << op << " is not in the default domain";
  }
  EXPECT_NE(unsupported_reason("ai.onnx.ml", "LabelEncoder"), "");
  EXPECT_NE(unsupported_reason("ai.onnx.ml", "TfIdfVectorizer"), "");
  EXPECT_EQ(unsupported_reason("", "TfIdfVectorizer"), "");
}

// A one-node model importing only `domain` at `version` (as ONNX's ai.onnx.ml node tests do).
std::string one_node_model(const char* op_type, const char* domain, int64_t version) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain(domain);
  o->set_version(version);
  auto* g = m.mutable_graph();
  for (const char* name : {"x", "y"}) {
    auto* v = name[0] == 'x' ? g->add_input() : g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  auto* n = g->add_node();
  n->set_name("only");
  n->set_op_type(op_type);
  n->set_domain(domain);
  n->add_input("x");
  n->add_output("y");
  return m.SerializeAsString();
}

TEST(RefMl, AiOnnxMlModelsImportAndExportWithTheirDomain) {
  Graph g = import_onnx_bytes(one_node_model("Binarizer", "ai.onnx.ml", 1), "");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, Op::Binarizer);
  EXPECT_EQ(g.nodes[0].opset, 1);
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(export_onnx_bytes(g)));
  bool imports_ml = false;
  for (const auto& o : back.opset_import()) imports_ml |= o.domain() == "ai.onnx.ml" && o.version() == 1;
  EXPECT_TRUE(imports_ml);
  EXPECT_EQ(import_onnx_bytes(back.SerializeAsString(), "").nodes[0].op, Op::Binarizer);

  // LabelEncoder is not implemented; Binarizer is no op of the default domain.
  for (auto [op, domain] : {std::pair{"LabelEncoder", "ai.onnx.ml"}, std::pair{"Binarizer", ""}}) {
    try {
      import_onnx_bytes(one_node_model(op, domain, domain[0] ? 1 : 17), "");
      ADD_FAILURE() << op << " in domain '" << domain << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::UnsupportedOp) << e.what();
      EXPECT_TRUE(contains(e.what(), op)) << e.what();
    }
  }
}

}  // namespace
}  // namespace fusor
