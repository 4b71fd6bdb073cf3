// GEMM and convolution epilogue fusion, and the Q/K/V merge: what the passes fuse and decline
// (with reasons) on hand-built graphs, and that the fused plan with its fast kernels computes
// what the unfused reference plan computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "kernels/cpu/backend.h"
#include "fused_vs_reference.h"
#include "graph_builder.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using test::GraphBuilder;
using V = std::vector<int64_t>;

Tensor random(Dims dims, float scale, uint32_t seed) { return test::random_normal(std::move(dims), scale, seed); }
Tensor weight(Dims dims, uint32_t seed) { return random(dims, 1.f / std::sqrt(static_cast<float>(dims[0])), seed); }
Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

FusionConfig only_gemm(bool with_gelu = false) {
  FusionConfig c;
  c.fuse_elemwise = false;
  c.fuse_attention = false;
  c.fuse_norm_act = with_gelu;  // fuse_gelu makes the Gelu item the epilogue takes
  return c;
}

std::vector<std::string> item_names(const Plan& p) {
  std::vector<std::string> names;
  for (const FusionItem& i : p.fusion.items) names.push_back(i.name);
  return names;
}

std::string reasons(const Plan& p, const std::string& pass) {
  std::string all;
  for (const NotFused& nf : p.fusion.not_fused)
    if (nf.pass == pass) all += nf.reason + "; ";
  return all;
}

// y = epilogue(x W + b) for x [2, 5, 16], W [16, 8].
struct Dense {
  GraphBuilder b;
  int x, w, bias, mm;
  Dense() {
    x = b.input("x");
    w = b.constant("W", weight({16, 8}, 1));
    bias = b.constant("b", random({8}, 1.f, 2));
    mm = b.node(Op::MatMul, {x, w}, "mm");
  }
};
test::Feeds dense_inputs() { return {{"x", random({2, 5, 16}, 1.f, 3)}}; }

TEST(FuseGemm, MatMulBias) {
  Dense d;
  int y = d.b.node(Op::Add, {d.bias, d.mm}, "y");  // bias first, as torch exports it
  auto r = test::expect_fused_matches_reference(d.b.finish({y}), dense_inputs(), only_gemm());
  EXPECT_EQ(item_names(r.fused), std::vector<std::string>{"bias"});
  EXPECT_TRUE(test::has_packed_gemm(r.kernels(), "matmul_f32_bias")) << r.kernels();
  EXPECT_EQ(r.fused.steps.size(), 1u);
}

TEST(FuseGemm, MatMulBiasRelu) {
  Dense d;
  int a = d.b.node(Op::Add, {d.mm, d.bias}, "a");
  int y = d.b.node(Op::Relu, {a}, "y");
  auto r = test::expect_fused_matches_reference(d.b.finish({y}), dense_inputs(), only_gemm());
  EXPECT_EQ(item_names(r.fused), std::vector<std::string>{"bias_relu"});
  EXPECT_NE(r.kernels().find("matmul_f32_bias_relu"), std::string::npos) << r.kernels();
}

TEST(FuseGemm, MatMulBiasGeluItemResidual) {
  Dense d;
  int res = d.b.input("r");
  int a = d.b.node(Op::Add, {d.bias, d.mm}, "a");
  // GELU, erf form as exported: a * (1 + erf(a / sqrt(2))) * 0.5
  int q = d.b.node(Op::Div, {a, d.b.constant("sqrt2", scalar(1.4142135f))}, "q");
  int e = d.b.node(Op::Erf, {q}, "e");
  int one = d.b.node(Op::Add, {e, d.b.constant("one", scalar(1.f))}, "onep");
  int m = d.b.node(Op::Mul, {a, one}, "m");
  int g = d.b.node(Op::Mul, {m, d.b.constant("half", scalar(0.5f))}, "g");
  int y = d.b.node(Op::Add, {res, g}, "y");  // residual first
  auto inputs = dense_inputs();
  inputs["r"] = random({2, 5, 8}, 1.f, 4);
  auto r = test::expect_fused_matches_reference(d.b.finish({y}), inputs, only_gemm(/*with_gelu=*/true));
  EXPECT_EQ(item_names(r.fused), (std::vector<std::string>{"gelu", "bias_gelu_residual"}));
  EXPECT_NE(r.kernels().find("matmul_f32_bias_gelu_erf_residual"), std::string::npos) << r.kernels();
  EXPECT_EQ(r.fused.steps.size(), 1u);
}

TEST(FuseGemm, GemmTransBWithCAndRelu) {
  GraphBuilder b;
  int x = b.input("x");
  int w = b.constant("W", weight({8, 16}, 5));
  int c = b.constant("C", random({1, 8}, 1.f, 6));
  int g = b.node(Op::Gemm, {x, w, c}, "g", DType::Float32, {{"transB", int64_t{1}}});
  int y = b.node(Op::Relu, {g}, "y");
  auto r = test::expect_fused_matches_reference(b.finish({y}), {{"x", random({3, 16}, 1.f, 7)}}, only_gemm());
  EXPECT_EQ(item_names(r.fused), std::vector<std::string>{"bias_relu"});
}

// GPT-2's Conv1D as exported: Reshape [2, 5, 16] -> [10, 16], Gemm with its bias as C, Reshape
// back to [2, 5, N], then the GELU (c_fc) or the residual Add (c_proj). The Reshape back only
// regroups the rows, so the activation and residual join the GEMM's epilogue through it.
struct Conv1D {
  GraphBuilder b;
  int y;
  Conv1D(bool residual, Dims back) {
    const int x = b.input("x");
    const int rows = b.node(Op::Reshape, {x, b.constant("flat", test::ints({-1, 16}))}, "rows");
    const int g = b.node(Op::Gemm, {rows, b.constant("W", weight({16, 8}, 11)), b.constant("C", random({8}, 1.f, 12))}, "g");
    const int r = b.node(Op::Reshape, {g, b.constant("back", test::ints(back))}, "r");
    y = residual ? b.node(Op::Add, {r, b.input("res")}, "y") : b.node(Op::Relu, {r}, "y");
  }
};

TEST(FuseGemm, Conv1DEpilogueThroughTheReshapeBack) {
  for (bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "residual" : "relu");
    Conv1D c(residual, {2, 5, 8});
    auto inputs = dense_inputs();
    if (residual) inputs["res"] = random({2, 5, 8}, 1.f, 13);
    auto r = test::expect_fused_matches_reference(c.b.finish({c.y}), inputs, only_gemm());
    EXPECT_EQ(item_names(r.fused), std::vector<std::string>{residual ? "bias_residual" : "bias_relu"});
    EXPECT_EQ(r.fused.steps.size(), 1u) << r.kernels();  // the Reshape to rows is a view
  }
}

// The Add after the Reshape broadcasts: no step follows the Reshape, so nothing fuses (the chain
// never ends in a Reshape, which would save nothing).
TEST(FuseGemm, Conv1DReshapeBeforeARefusedStepStaysUnfused) {
  GraphBuilder b;
  const int x = b.input("x");
  const int g = b.node(Op::Gemm, {x, b.constant("W", weight({16, 8}, 14)), b.constant("C", random({8}, 1.f, 15))}, "g");
  const int r = b.node(Op::Reshape, {g, b.constant("back", test::ints({2, 5, 8}))}, "r");
  const int y = b.node(Op::Add, {r, b.input("wide")}, "y");  // [2, 5, 8] + [3, 2, 5, 8]
  auto out = test::expect_fused_matches_reference(b.finish({y}), {{"x", random({10, 16}, 1.f, 16)}, {"wide", random({3, 2, 5, 8}, 1.f, 17)}},
                                                  only_gemm());
  EXPECT_TRUE(out.fused.fusion.items.empty()) << out.kernels();
  EXPECT_NE(reasons(out.fused, "fuse_gemm_epilogue").find("broadcasts"), std::string::npos);
}

// MatMul -> Reshape -> bias Add -> Relu: the item is named after the MatMul and its bias Add, not
// the Reshape between them.
TEST(FuseGemm, ReshapedBiasItemIsNamedAfterTheGemmAndItsBias) {
  GraphBuilder b;
  const int x = b.input("x");
  b.scope("/layer.0/dense/");
  const int mm = b.node(Op::MatMul, {x, b.constant("W", weight({16, 8}, 18))}, "mm");
  b.scope("/layer.0/view/");
  const int r = b.node(Op::Reshape, {mm, b.constant("back", test::ints({2, 5, 8}))}, "r");
  b.scope("/layer.0/dense/");
  const int a = b.node(Op::Add, {r, b.constant("b", random({8}, 1.f, 19))}, "a");
  const int y = b.node(Op::Relu, {a}, "y");
  auto out = test::expect_fused_matches_reference(b.finish({y}), {{"x", random({10, 16}, 1.f, 20)}}, only_gemm());
  EXPECT_EQ(item_names(out.fused), std::vector<std::string>{"layer0.dense.bias_relu"});
}

TEST(FuseGemm, Conv1DReshapeThatSplitsTheColumnsEndsTheEpilogue) {
  Conv1D c(false, {2, 5, 2, 4});  // [10, 8] -> [.., 2, 4]: the Relu no longer reads rows of N
  auto r = test::expect_fused_matches_reference(c.b.finish({c.y}), dense_inputs(), only_gemm());
  EXPECT_TRUE(r.fused.fusion.items.empty()) << r.kernels();
}

TEST(FuseGemm, DeclinesBiasOfTheWrongShape) {
  Dense d;
  int bad = d.b.constant("b2", random({5, 8}, 1.f, 8));  // per row and column: not a bias
  int y = d.b.node(Op::Add, {d.mm, bad}, "y");
  auto r = test::expect_fused_matches_reference(d.b.finish({y}), dense_inputs(), only_gemm());
  EXPECT_TRUE(r.fused.fusion.items.empty());
  EXPECT_NE(reasons(r.fused, "fuse_gemm_epilogue").find("bias shape [5, 8] is not [8]"), std::string::npos)
      << reasons(r.fused, "fuse_gemm_epilogue");
}

TEST(FuseGemm, DeclinesAnIntermediateUsedTwice) {
  Dense d;
  int a = d.b.node(Op::Add, {d.mm, d.bias}, "a");
  int y = d.b.node(Op::Relu, {a}, "y");
  int z = d.b.node(Op::Sigmoid, {a}, "z");
  auto r = test::expect_fused_matches_reference(d.b.finish({y, z}), dense_inputs(), only_gemm());
  EXPECT_EQ(item_names(r.fused), std::vector<std::string>{"bias"});  // stops before the shared value
  EXPECT_NE(reasons(r.fused, "fuse_gemm_epilogue").find("'a' is used by 2 nodes"), std::string::npos)
      << reasons(r.fused, "fuse_gemm_epilogue");
}

TEST(FuseGemm, DeclinesARuntimeWeight) {
  GraphBuilder b;
  int x = b.input("x"), w = b.input("w");
  int a = b.node(Op::MatMul, {x, w}, "mm");
  int y = b.node(Op::Add, {a, b.constant("b", random({8}, 1.f, 9))}, "y");
  auto r = test::expect_fused_matches_reference(b.finish({y}), {{"x", random({4, 16}, 1.f, 10)}, {"w", weight({16, 8}, 11)}},
                                                only_gemm());
  EXPECT_TRUE(r.fused.fusion.items.empty());
  EXPECT_NE(reasons(r.fused, "fuse_gemm_epilogue").find("weight is not a plan-time constant"), std::string::npos);
}

TEST(FuseGemm, SwitchedOffByTheConfig) {
  Dense d;
  int y = d.b.node(Op::Add, {d.bias, d.mm}, "y");
  FusionConfig off = only_gemm();
  off.fuse_gemm_epilogue = false;
  auto r = test::expect_fused_matches_reference(d.b.finish({y}), dense_inputs(), off);
  EXPECT_TRUE(r.fused.fusion.items.empty());
  off = only_gemm();
  off.disabled = {"bias"};
  r = test::expect_fused_matches_reference(r.fused.source_graph, dense_inputs(), off);
  EXPECT_TRUE(r.fused.fusion.items.empty());
}

// Query, key and value projections of one input, each with its bias; value has another width.
TEST(MergeProjections, QkvBecomeOneGemmWithThreeOutputs) {
  GraphBuilder b;
  int x = b.input("x");
  std::vector<int> outs;
  const std::vector<std::pair<const char*, int64_t>> heads = {{"q", 8}, {"k", 8}, {"v", 12}};
  uint32_t seed = 20;
  for (const auto& [name, n] : heads) {
    int w = b.constant(std::string("W") + name, weight({16, n}, seed++));
    int bias = b.constant(std::string("b") + name, random({n}, 1.f, seed++));
    int mm = b.node(Op::MatMul, {x, w}, std::string("mm_") + name);
    outs.push_back(b.node(Op::Add, {bias, mm}, name));
  }
  outs.push_back(b.node(Op::Relu, {outs[0]}, "after_q"));  // a consumer outside the merged node
  auto r = test::expect_fused_matches_reference(b.finish(outs), {{"x", random({2, 7, 16}, 1.f, 30)}}, only_gemm());
  EXPECT_EQ(item_names(r.fused), std::vector<std::string>{"qkv"});
  EXPECT_TRUE(test::has_packed_gemm(r.kernels(), "matmul_f32_merged3_bias")) << r.kernels();
}

// Members that each start on a panel of the panel GEMM (MiniLM's 384-wide Q, K and V): the GEMM
// stores each panel into its member's output; the last member may end in a partial panel.
TEST(MergeProjections, MembersOnPanelBoundariesGetTheirColumns) {
  GraphBuilder b;
  int x = b.input("x");
  std::vector<int> outs;
  uint32_t seed = 40;
  for (const auto& [name, n] : std::vector<std::pair<const char*, int64_t>>{{"q", 96}, {"k", 48}, {"v", 53}}) {
    int w = b.constant(std::string("W") + name, weight({16, n}, seed++));
    int bias = b.constant(std::string("b") + name, random({n}, 1.f, seed++));
    outs.push_back(b.node(Op::Add, {b.node(Op::MatMul, {x, w}, std::string("mm_") + name), bias}, name));
  }
  auto r = test::expect_fused_matches_reference(b.finish(outs), {{"x", random({3, 9, 16}, 1.f, 50)}}, only_gemm());
  EXPECT_EQ(item_names(r.fused), std::vector<std::string>{"qkv"});
}

TEST(MergeProjections, DeclinesARuntimeWeight) {
  GraphBuilder b;
  int x = b.input("x");
  int y1 = b.node(Op::MatMul, {x, b.constant("W1", weight({16, 8}, 1))}, "y1");
  int y2 = b.node(Op::MatMul, {x, b.input("w2")}, "y2");  // runtime weight: not merged
  auto r = test::expect_fused_matches_reference(b.finish({y1, y2}), {{"x", random({3, 16}, 1.f, 2)}, {"w2", weight({16, 4}, 3)}},
                                                only_gemm());
  EXPECT_TRUE(r.fused.fusion.items.empty());
  EXPECT_NE(reasons(r.fused, "merge_projections").find("not a plan-time constant"), std::string::npos);
}

// A ResNet basic block: y = Relu(Conv(Relu(Conv(x) + b1)) + b2 + x).
TEST(FuseConv, ConvReluAndConvResidualRelu) {
  GraphBuilder b;
  int x = b.input("x");
  std::map<std::string, Attribute> attrs = {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}};
  int c1 = b.node(Op::Conv, {x, b.constant("W1", weight({8, 8, 3, 3}, 40)), b.constant("B1", random({8}, 1.f, 41))},
                  "c1", DType::Float32, attrs);
  int r1 = b.node(Op::Relu, {c1}, "r1");
  int c2 = b.node(Op::Conv, {r1, b.constant("W2", weight({8, 8, 3, 3}, 42)), b.constant("B2", random({8}, 1.f, 43))},
                  "c2", DType::Float32, attrs);
  int s = b.node(Op::Add, {c2, x}, "s");
  int y = b.node(Op::Relu, {s}, "y");
  for (int64_t batch : {1, 2}) {
    auto r = test::expect_fused_matches_reference(b.finish({y}), {{"x", random({batch, 8, 10, 10}, 1.f, 44)}}, only_gemm());
    EXPECT_EQ(item_names(r.fused), (std::vector<std::string>{"conv_relu", "conv_residual_relu"}));
    EXPECT_NE(r.kernels().find("conv2d_f32_bias_residual_relu"), std::string::npos) << r.kernels();
    EXPECT_EQ(r.fused.steps.size(), 2u);
  }
}

// SiLU as torch exports it (YOLO's Conv+BN+SiLU, U-Net blocks): y = c * Sigmoid(c). The pair is
// one epilogue (oneDNN's swish, alpha 1) on a convolution and on a GEMM; a Sigmoid whose result
// is also read elsewhere is no SiLU and stays out.
TEST(FuseConv, SiluPairIsOneEpilogue) {
  GraphBuilder b;
  int x = b.input("x");
  std::map<std::string, Attribute> attrs = {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}};
  int c1 = b.node(Op::Conv, {x, b.constant("W1", weight({8, 8, 3, 3}, 50)), b.constant("B1", random({8}, 1.f, 51))},
                  "c1", DType::Float32, attrs);
  int s1 = b.node(Op::Sigmoid, {c1}, "s1");
  int y1 = b.node(Op::Mul, {s1, c1}, "y1");  // either operand order
  int mm = b.node(Op::MatMul, {y1, b.constant("W2", weight({10, 6}, 52))}, "mm");
  int s2 = b.node(Op::Sigmoid, {mm}, "s2");
  int y2 = b.node(Op::Mul, {mm, s2}, "y2");
  int c3 = b.node(Op::Conv, {y1, b.constant("W3", weight({8, 8, 3, 3}, 53))}, "c3", DType::Float32, attrs);
  int s3 = b.node(Op::Sigmoid, {c3}, "s3");
  int y3 = b.node(Op::Mul, {c3, s3}, "y3");
  int z3 = b.node(Op::Add, {s3, y3}, "z3");  // s3 read twice: not the SiLU pattern
  for (int64_t batch : {1, 2}) {
    auto r = test::expect_fused_matches_reference(b.finish({y2, z3}), {{"x", random({batch, 8, 10, 10}, 2.f, 54)}},
                                                  only_gemm());
    EXPECT_EQ(item_names(r.fused), (std::vector<std::string>{"conv_silu", "silu"})) << r.kernels();
    EXPECT_NE(r.kernels().find("conv2d_f32_bias_silu"), std::string::npos) << r.kernels();
    EXPECT_NE(r.kernels().find("silu"), r.kernels().rfind("conv2d_f32_bias_silu")) << r.kernels();
    EXPECT_NE(reasons(r.fused, "fuse_gemm_epilogue").find("'c3' is used by 2 nodes"), std::string::npos)
        << reasons(r.fused, "fuse_gemm_epilogue");
  }
}

// r1 = Relu(Conv(x)) feeds a convolution and, as its residual, the one after; every reader of r1
// and r2 takes oneDNN's blocked layout, so they stay blocked between the steps, while the graph output
// and what step observers (the precision gate) see stay row-major.
TEST(FuseConv, BlockedLayoutBetweenConvolutions) {
  GraphBuilder b;
  int x = b.input("x");
  std::map<std::string, Attribute> attrs = {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}};
  int c1 = b.node(Op::Conv, {x, b.constant("W1", weight({16, 16, 3, 3}, 50)), b.constant("B1", random({16}, 1.f, 51))},
                  "c1", DType::Float32, attrs);
  int r1 = b.node(Op::Relu, {c1}, "r1");
  int c2 = b.node(Op::Conv, {r1, b.constant("W2", weight({16, 16, 3, 3}, 52)), b.constant("B2", random({16}, 1.f, 53))},
                  "c2", DType::Float32, attrs);
  int r2 = b.node(Op::Relu, {c2}, "r2");
  int c3 = b.node(Op::Conv, {r2, b.constant("W3", weight({16, 16, 3, 3}, 55))}, "c3", DType::Float32, attrs);
  int s = b.node(Op::Add, {c3, r1}, "s");
  int y = b.node(Op::Relu, {s}, "y");
  auto g = b.finish({y});
  const std::string r1_name = g->values[static_cast<size_t>(r1)].name;
  const std::string r2_name = g->values[static_cast<size_t>(r2)].name;
  for (int64_t batch : {1, 3}) {
    test::Feeds in = {{"x", random({batch, 16, 9, 11}, 1.f, 54)}};
    // 16 channels make these Winograd layers (AVX-512), whose rounding differs from the direct
    // reference by a few 1e-6 of the layer's magnitude (here up to 11).
    const Tolerance winograd{1e-4, 1e-4, std::numeric_limits<int64_t>::max()};
    auto r = test::expect_fused_matches_reference(g, in, only_gemm(), winograd);
    ASSERT_EQ(r.fused.steps.size(), 3u) << r.kernels();
    if (!r.fused.steps[0].kernel->offered_output_layout().empty()) {
      std::vector<std::string> blocked;
      for (size_t v = 0; v < r.fused.blocked_by.size(); ++v)
        if (r.fused.blocked_by[v]) blocked.push_back(r.fused.graph->values[v].name);
      std::sort(blocked.begin(), blocked.end());
      std::vector<std::string> want = {r1_name, r2_name};
      std::sort(want.begin(), want.end());
      EXPECT_EQ(blocked, want) << r.kernels();
    }
    auto fast_seen = test::observed_values(r.fused, in), ref_seen = test::observed_values(r.reference, in);
    for (const std::string& name : {r1_name, r2_name}) {
      ASSERT_TRUE(fast_seen.count(name) && ref_seen.count(name)) << name;
      EXPECT_TRUE(test::outputs_agree({fast_seen[name]}, {ref_seen[name]}, winograd, {name}))
          << "as a step observer sees it";
    }
  }
}

// Switched off, the same plan keeps every value row-major.
TEST(FuseConv, BlockedLayoutsCanBeSwitchedOff) {
  GraphBuilder b;
  int x = b.input("x");
  std::map<std::string, Attribute> attrs = {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}};
  int c1 = b.node(Op::Conv, {x, b.constant("W1", weight({16, 8, 3, 3}, 60))}, "c1", DType::Float32, attrs);
  int r1 = b.node(Op::Relu, {c1}, "r1");
  int c2 = b.node(Op::Conv, {r1, b.constant("W2", weight({16, 16, 3, 3}, 61))}, "c2", DType::Float32, attrs);
  int y = b.node(Op::Relu, {c2}, "y");
  PlanOptions o;
  o.backend = &cpu::backend();
  o.fusion = only_gemm();
  o.blocked_layouts = false;
  Plan p = build_plan(b.finish({y}), {{"x", {1, 8, 8, 8}}}, o);
  EXPECT_TRUE(p.blocked_by.empty());
}

}  // namespace
}  // namespace fusor
