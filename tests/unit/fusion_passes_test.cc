// The fusion framework and the pattern passes: what is fused, what is declined and why, and that
// a fused plan computes what the reference computes.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph_edit.h"
#include "passes/legality.h"
#include "passes/naming.h"
#include "fused_vs_reference.h"
#include "graph_builder.h"

namespace fusor {
namespace {

Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  *t.data<float>() = v;
  return t;
}

Tensor filled(Dims dims, float scale, float offset) {
  Tensor t(DType::Float32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * static_cast<float>(i)) * scale + offset;
  return t;
}

struct LayerNormSpec {
  std::vector<int64_t> axes = {-1};
  float exponent = 2.0f;
  bool affine = true;
  bool centered_escapes = false;  // the centered input also feeds the graph output
};

// The decomposed LayerNorm of a [4, 8, 16] input, as exporters write it.
std::shared_ptr<const Graph> layer_norm_graph(const LayerNormSpec& s) {
  test::GraphBuilder b;
  int x = b.input("x");
  std::map<std::string, Attribute> axes = {{"axes", s.axes}};
  int mean = b.node(Op::ReduceMean, {x}, "mean", DType::Float32, axes);
  int centered = b.node(Op::Sub, {x, mean}, "centered");
  int sq = b.node(Op::Pow, {centered, b.constant("two", scalar(s.exponent))}, "sq");
  int var = b.node(Op::ReduceMean, {sq}, "var", DType::Float32, axes);
  int ve = b.node(Op::Add, {var, b.constant("eps", scalar(1e-5f))}, "ve");
  int sd = b.node(Op::Sqrt, {ve}, "sd");
  int y = b.node(Op::Div, {centered, sd}, "norm");
  if (s.affine) {
    y = b.node(Op::Mul, {y, b.constant("gamma", filled({16}, 0.5f, 1.0f))}, "scaled");
    y = b.node(Op::Add, {y, b.constant("beta", filled({16}, 0.1f, 0.0f))}, "y");
  }
  std::vector<int> outputs = {y};
  if (s.centered_escapes) outputs.push_back(centered);
  return b.finish(outputs);
}

size_t count_kind(const Plan& p, const std::string& kind) {
  size_t n = 0;
  for (const Step& s : p.steps) n += p.graph->nodes[static_cast<size_t>(s.node)].op_type == kind;
  return n;
}

bool declined_with(const Plan& p, const std::string& fragment) {
  for (const NotFused& nf : p.fusion.not_fused)
    if (nf.reason.find(fragment) != std::string::npos) return true;
  return false;
}

const std::map<std::string, Dims> kDims = {{"x", {4, 8, 16}}};
// A fused LayerNorm or GELU computes what its nodes compute: held to the gate's strict rule.
const Tolerance kStrict = tolerance_for(PrecisionCheck::Strict);

TEST(FuseLayerNorm, DecomposedFormBecomesOneKernelWithTheSameNumbers) {
  auto g = layer_norm_graph({});
  auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 8, 16}, 3.0f, 1.0f)}}, FusionConfig{}, kStrict);
  EXPECT_EQ(r.fused.steps.size(), 1u);
  EXPECT_EQ(count_kind(r.fused, "LayerNorm"), 1u);
  ASSERT_EQ(r.fused.fusion.items.size(), 1u);
  EXPECT_EQ(r.fused.fusion.items[0].kind, "LayerNorm");
  EXPECT_EQ(r.fused.fusion.items[0].nodes.size(), 9u);
  EXPECT_GT(r.fused.fusion.items[0].bytes_saved, 0u);
}

// RMSNorm as LLaMA exports it (Cast to float32, x * (1 / sqrt(mean(x^2) + eps)), Cast, * gamma)
// or as x / sqrt(...) * gamma; `axes` other than the last is a near miss.
std::shared_ptr<const Graph> rms_norm_graph(bool reciprocal_form, std::vector<int64_t> axes = {-1},
                                            Dims gamma_dims = {16}) {
  test::GraphBuilder b;
  int x = b.input("x");
  int xf = b.node(Op::Cast, {x}, "to_float", DType::Float32, {{"to", DType::Float32}});
  int sq = b.node(Op::Pow, {xf, b.constant("two", scalar(2.0f))}, "sq");
  int ms = b.node(Op::ReduceMean, {sq}, "ms", DType::Float32, {{"axes", axes}});
  int me = b.node(Op::Add, {ms, b.constant("eps", scalar(1e-6f))}, "me");
  int rms = b.node(Op::Sqrt, {me}, "rms");
  int y;
  if (reciprocal_form) {
    int inv = b.node(Op::Div, {b.constant("one", scalar(1.0f)), rms}, "inv");
    y = b.node(Op::Mul, {xf, inv}, "normed");
    y = b.node(Op::Cast, {y}, "back", DType::Float32, {{"to", DType::Float32}});
  } else {
    y = b.node(Op::Div, {xf, rms}, "normed");
  }
  y = b.node(Op::Mul, {b.constant("gamma", filled(gamma_dims, 0.5f, 1.0f)), y}, "y");
  return b.finish({y});
}

TEST(FuseLayerNorm, RmsNormBecomesOneKernelWithTheSameNumbers) {
  for (bool reciprocal : {true, false}) {
    auto g = rms_norm_graph(reciprocal);
    auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 8, 16}, 3.0f, 1.0f)}}, FusionConfig{}, kStrict);
    EXPECT_EQ(r.fused.steps.size(), 1u) << reciprocal;
    ASSERT_EQ(r.fused.fusion.items.size(), 1u);
    EXPECT_EQ(r.fused.fusion.items[0].kind, "LayerNorm");
    EXPECT_EQ(r.fused.fusion.items[0].nodes.size(), reciprocal ? 9u : 7u);
    EXPECT_NE(r.fused.steps[0].kernel->name().find("rmsnorm"), std::string::npos);
  }
}

TEST(FuseLayerNorm, RmsNormOverAnotherAxisIsDeclinedWithItsReason) {
  auto g = rms_norm_graph(true, {1});
  auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 8, 16}, 3.0f, 1.0f)}}, FusionConfig{}, kStrict);
  EXPECT_EQ(count_kind(r.fused, "LayerNorm"), 0u);
  EXPECT_TRUE(declined_with(r.fused, "RMSNorm: the mean of squares is not over the last axis"));
}

TEST(FuseLayerNorm, RmsNormScaleAlongAnotherAxisIsDeclined) {
  // gamma [16, 1] has the normalized axis' 16 elements but scales axis 1 of x [4, 16, 16]: fused,
  // the kernel applied it along the last axis.
  auto g = rms_norm_graph(false, {-1}, {16, 1});
  auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 16, 16}, 3.0f, 1.0f)}}, FusionConfig{}, kStrict);
  EXPECT_EQ(count_kind(r.fused, "LayerNorm"), 0u);
}

TEST(FuseLayerNorm, WithoutAffinePartFallsBackToItsNodesWithAReason) {
  auto g = layer_norm_graph({.affine = false});
  auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 8, 16}, 3.0f, 1.0f)}}, FusionConfig{}, kStrict);
  EXPECT_EQ(count_kind(r.fused, "LayerNorm"), 0u);
  EXPECT_TRUE(declined_with(r.fused, "no fast LayerNorm kernel"));
}

struct NearMiss {
  const char* name;
  LayerNormSpec spec;
  const char* reason;
};

class LayerNormNearMiss : public ::testing::TestWithParam<NearMiss> {};

TEST_P(LayerNormNearMiss, IsDeclinedWithItsReasonAndStaysCorrect) {
  auto g = layer_norm_graph(GetParam().spec);
  auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 8, 16}, 3.0f, 1.0f)}}, FusionConfig{}, kStrict);
  EXPECT_EQ(count_kind(r.fused, "LayerNorm"), 0u);
  EXPECT_TRUE(declined_with(r.fused, GetParam().reason)) << GetParam().reason;
}

INSTANTIATE_TEST_SUITE_P(
    Table, LayerNormNearMiss,
    ::testing::Values(NearMiss{"other_axis", {.axes = {1}}, "axes not at the end"},
                      NearMiss{"fourth_power", {.exponent = 4.0f}, "Pow exponent is not 2"},
                      NearMiss{"escaping", {.centered_escapes = true}, "is a graph output"}),
    [](const auto& info) { return std::string(info.param.name); });

// x * (1 + erf(x / c)) * 0.5 over [4, 64].
std::shared_ptr<const Graph> gelu_erf_graph(float divisor) {
  test::GraphBuilder b;
  int x = b.input("x");
  int scaled = b.node(Op::Div, {x, b.constant("c", scalar(divisor))}, "scaled");
  int e = b.node(Op::Erf, {scaled}, "erf");
  int onep = b.node(Op::Add, {e, b.constant("one", scalar(1.0f))}, "onep");
  int m = b.node(Op::Mul, {x, onep}, "m");
  return b.finish({b.node(Op::Mul, {m, b.constant("half", scalar(0.5f))}, "y")});
}

// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), with the half applied to x first.
std::shared_ptr<const Graph> gelu_tanh_graph() {
  test::GraphBuilder b;
  int x = b.input("x");
  int cube = b.node(Op::Pow, {x, b.constant("three", scalar(3.0f))}, "cube");
  int k = b.node(Op::Mul, {cube, b.constant("coef", scalar(0.044715f))}, "k");
  int inner = b.node(Op::Add, {x, k}, "inner");
  int arg = b.node(Op::Mul, {b.constant("s", scalar(0.7978845608f)), inner}, "arg");
  int t = b.node(Op::Tanh, {arg}, "t");
  int onep = b.node(Op::Add, {t, b.constant("one", scalar(1.0f))}, "onep");
  int halfx = b.node(Op::Mul, {b.constant("half", scalar(0.5f)), x}, "halfx");
  return b.finish({b.node(Op::Mul, {halfx, onep}, "y")});
}


TEST(FuseGelu, ErfAndTanhFormsBecomeGeluWithTheSameNumbers) {
  Tensor x = filled({4, 64}, 4.0f, 0.0f);
  for (auto g : {gelu_erf_graph(1.4142135f), gelu_tanh_graph()}) {
    FusionConfig only_patterns;
    only_patterns.fuse_elemwise = false;  // what is left must not be swept up by the generic pass
    auto r = test::expect_fused_matches_reference(g, {{"x", x}}, only_patterns, kStrict);
    EXPECT_EQ(r.fused.steps.size(), 1u);
    EXPECT_EQ(count_kind(r.fused, "Gelu"), 1u);
  }
}

TEST(FuseGelu, LookAlikeWithOtherConstantsIsDeclinedAndStaysCorrect) {
  auto g = gelu_erf_graph(1.5f);
  auto r = test::expect_fused_matches_reference(g, {{"x", filled({4, 64}, 4.0f, 0.0f)}}, FusionConfig{}, kStrict);
  EXPECT_EQ(count_kind(r.fused, "Gelu"), 0u);
  EXPECT_TRUE(declined_with(r.fused, "erf's argument scale"));
}

TEST(FusionConfig, DisabledItemIsNotFusedAndNamesStayStable) {
  auto g = layer_norm_graph({});
  Plan fused = test::fast_plan(g, kDims);
  ASSERT_EQ(fused.fusion.items.size(), 1u);
  const std::string name = fused.fusion.items[0].name;
  FusionConfig off;
  off.disabled = {name};
  Plan disabled = test::fast_plan(g, kDims, off);
  EXPECT_EQ(count_kind(disabled, "LayerNorm"), 0u);
  EXPECT_TRUE(declined_with(disabled, "fusion.disabled"));
  FusionConfig none;
  set_every_switch(none, false);
  EXPECT_EQ(test::fast_plan(g, kDims, none).steps.size(), 9u);
}

TEST(GraphEdit, FuseThenInlineRestoresTheGraph) {
  auto source = layer_norm_graph({});
  Graph g = *source;
  std::vector<int> all;
  for (size_t i = 0; i < g.nodes.size(); ++i) all.push_back(static_cast<int>(i));
  int fused = fuse_nodes(g, all, "LayerNorm", "ln");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[static_cast<size_t>(fused)].body->nodes.size(), 9u);
  EXPECT_EQ(g.nodes[0].outputs, source->outputs);
  EXPECT_EQ(inline_fused(g, fused), 9u);
  ASSERT_EQ(g.nodes.size(), source->nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(g.nodes[i].name, source->nodes[i].name);
    EXPECT_EQ(g.nodes[i].inputs, source->nodes[i].inputs);
    EXPECT_EQ(g.nodes[i].outputs, source->nodes[i].outputs);
  }
}

TEST(Legality, CycleThroughAnOutsideNodeIsRefused) {
  // a = Relu(x); c = Sigmoid(a) (outside); d = Add(a, c): fusing {a, d} would need c inside.
  test::GraphBuilder b;
  int x = b.input("x");
  int a = b.node(Op::Relu, {x}, "a");
  int c = b.node(Op::Sigmoid, {a}, "c");
  auto g = b.finish({b.node(Op::Add, {a, c}, "d")});
  auto why = why_not_legal(*g, {0, 2}, {.allow_extra_outputs = true});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("cycle"), std::string::npos) << *why;
  EXPECT_FALSE(why_not_legal(*g, {0, 1, 2}).has_value());
  auto escapes = why_not_legal(*g, {0, 1});
  ASSERT_TRUE(escapes.has_value());
  EXPECT_NE(escapes->find("also used by"), std::string::npos) << *escapes;
}

TEST(Naming, ScopeComesFromTheLayerOnAndNamesAreUnique) {
  test::GraphBuilder b;
  int x = b.input("x");
  b.node(Op::Relu, {x}, "a");
  b.node(Op::Relu, {x}, "c");
  auto built = b.finish({});
  Graph g = *built;
  g.nodes[0].name = "/encoder/layer.3/attention/self/MatMul";
  g.nodes[1].name = "/encoder/layer.3/attention/self/Softmax";
  EXPECT_EQ(common_scope(g, {0, 1}), "layer3.attention.self");
  g.nodes[1].name = "/encoder/layer.3/output/Add";
  EXPECT_EQ(common_scope(g, {0, 1}), "layer3");
  std::set<std::string> taken;
  EXPECT_EQ(unique_item_name("layer3", "attention", taken), "layer3.attention");
  EXPECT_EQ(unique_item_name("layer3", "attention", taken), "layer3.attention.2");
  EXPECT_EQ(unique_item_name("embeddings.layernorm", "layernorm", taken), "embeddings.layernorm");
  EXPECT_EQ(unique_item_name("", "gelu", taken), "gelu");
}

}  // namespace
}  // namespace fusor
