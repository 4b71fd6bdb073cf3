// The fused kind table (src/passes/fused_kinds.h) and its attribute contract: every fused node
// the passes make carries the attributes its contract lists for the pass that made it, of the
// listed types, and no others. One hand-built graph per case; together they make every
// (kind, pass) pair in the table, which the test checks too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "kernels/ref/reference.h"
#include "passes/fused_kinds.h"
#include "passes/pipeline.h"
#include "graph_builder.h"
#include "group_norm_graph.h"
#include "rotary_graph.h"

namespace fusor {
namespace {

using test::GraphBuilder;
using V = std::vector<int64_t>;

Tensor filled(Dims dims, float offset) {
  Tensor t(DType::Float32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * static_cast<float>(i)) * 0.5f + offset;
  return t;
}
Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}
Tensor ints(V v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

// y = LayerNorm(x) * gamma + beta over x's last axis (8), decomposed as exporters write it.
int layer_norm(GraphBuilder& b, int x) {
  std::map<std::string, Attribute> axes = {{"axes", V{-1}}};
  int mean = b.node(Op::ReduceMean, {x}, "mean", DType::Float32, axes);
  int c = b.node(Op::Sub, {x, mean}, "centered");
  int sq = b.node(Op::Pow, {c, b.constant("two", scalar(2))}, "sq");
  int var = b.node(Op::ReduceMean, {sq}, "var", DType::Float32, axes);
  int sd = b.node(Op::Sqrt, {b.node(Op::Add, {var, b.constant("eps", scalar(1e-5f))}, "var_eps")}, "sd");
  int n = b.node(Op::Div, {c, sd}, "normed");
  int g = b.node(Op::Mul, {n, b.constant("gamma", filled({8}, 1.f))}, "scaled");
  return b.node(Op::Add, {g, b.constant("beta", filled({8}, 0.f))}, "ln");
}

// x * (1 + erf(x / sqrt 2)) * 0.5
int gelu(GraphBuilder& b, int x, const std::string& n) {
  int e = b.node(Op::Erf, {b.node(Op::Div, {x, b.constant(n + "_sqrt2", scalar(1.4142135f))}, n + "_d")}, n + "_e");
  int p = b.node(Op::Add, {e, b.constant(n + "_one", scalar(1))}, n + "_p");
  return b.node(Op::Mul, {b.node(Op::Mul, {x, p}, n + "_m"), b.constant(n + "_half", scalar(0.5f))}, n);
}

// act(x W + b) for x [.., k], W [k, n].
int dense(GraphBuilder& b, int x, int64_t k, int64_t n, const std::string& name) {
  int mm = b.node(Op::MatMul, {x, b.constant(name + "_W", filled({k, n}, 0.f))}, name + "_mm");
  return b.node(Op::Add, {mm, b.constant(name + "_b", filled({n}, 0.f))}, name);
}

std::shared_ptr<const Graph> layer_norm_graph() {
  GraphBuilder b;
  return b.finish({layer_norm(b, b.input("x"))});
}

// A Gelu on a graph input: fuse_gelu makes it, fuse_elementwise may take it into a group.
std::shared_ptr<const Graph> gelu_graph() {
  GraphBuilder b;
  return b.finish({gelu(b, b.input("x"), "gelu")});
}

// Dense + Gelu item, Dense + LeakyRelu (alpha) + residual, Gemm with transB + Relu.
std::shared_ptr<const Graph> epilogue_graph() {
  GraphBuilder b;
  int x = b.input("x");
  int h = gelu(b, dense(b, x, 8, 8, "up"), "up_gelu");
  int l = b.node(Op::LeakyRelu, {dense(b, h, 8, 8, "down")}, "down_act", DType::Float32, {{"alpha", 0.1f}});
  int r = b.node(Op::Add, {l, x}, "residual");
  int flat = b.node(Op::Reshape, {r, b.constant("rows", ints({-1, 8}))}, "flat");
  int gemm = b.node(Op::Gemm, {flat, b.constant("G", filled({4, 8}, 0.f)), b.constant("C", filled({4}, 0.f))}, "gemm",
                    DType::Float32, {{"transB", int64_t{1}}});
  return b.finish({b.node(Op::Relu, {gemm}, "y")});
}

// Query, key and value projections of one input, each with its bias.
std::shared_ptr<const Graph> projections_graph() {
  GraphBuilder b;
  int x = b.input("x");
  return b.finish({dense(b, x, 8, 8, "q"), dense(b, x, 8, 8, "k"), dense(b, x, 8, 4, "v")});
}

// Relu(Conv(x) + B) and Relu(Conv(.) + B + x): a ResNet basic block.
std::shared_ptr<const Graph> conv_graph() {
  GraphBuilder b;
  int x = b.input("x");
  std::map<std::string, Attribute> attrs = {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}};
  auto conv = [&](int in, const std::string& n) {
    return b.node(Op::Conv, {in, b.constant(n + "_W", filled({4, 4, 3, 3}, 0.f)), b.constant(n + "_B", filled({4}, 0.f))},
                  n, DType::Float32, attrs);
  };
  int r1 = b.node(Op::Relu, {conv(x, "c1")}, "r1");
  return b.finish({b.node(Op::Relu, {b.node(Op::Add, {conv(r1, "c2"), x}, "s")}, "y")});
}

// softmax(q k^T / sqrt(D) + mask) v for q, k, v [B, S, H*D] with H = 2, D = 4.
std::shared_ptr<const Graph> attention_graph() {
  GraphBuilder b;
  int q = b.input("q"), k = b.input("k"), v = b.input("v"), mask = b.input("mask");
  int split = b.constant("split", ints({0, 0, 2, 4}));
  auto heads = [&](int x, const std::string& n, V perm) {
    return b.node(Op::Transpose, {b.node(Op::Reshape, {x, split}, n + "_heads")}, n + "_t", DType::Float32, {{"perm", perm}});
  };
  int scores = b.node(Op::MatMul, {heads(q, "q", {0, 2, 1, 3}), heads(k, "k", {0, 2, 3, 1})}, "scores");
  int scaled = b.node(Op::Div, {scores, b.constant("sqrt_d", scalar(2.f))}, "scaled");
  int probs = b.node(Op::Softmax, {b.node(Op::Add, {scaled, mask}, "masked")}, "probs", DType::Float32, {{"axis", int64_t{-1}}});
  int ctx = b.node(Op::MatMul, {probs, heads(v, "v", {0, 2, 1, 3})}, "context");
  int t = b.node(Op::Transpose, {ctx}, "context_t", DType::Float32, {{"perm", V{0, 2, 1, 3}}});
  return b.finish({b.node(Op::Reshape, {t, b.constant("merge", ints({0, 0, 8}))}, "out")});
}

// (x + c) * x, then tanh: a chain of elementwise and broadcast ops.
std::shared_ptr<const Graph> elementwise_graph() {
  GraphBuilder b;
  int x = b.input("x");
  int s = b.node(Op::Add, {x, b.constant("c", filled({8}, 0.f))}, "s");
  return b.finish({b.node(Op::Tanh, {b.node(Op::Mul, {s, x}, "m")}, "y")});
}

// x -> Q -> DQ -> Conv (int8 weights) -> Relu -> Q -> DQ -> MaxPool -> Q: a QDQ model's units,
// then a dynamically quantized model's MatMulInteger -> Cast -> Mul over the last axis (3).
std::shared_ptr<const Graph> quantized_graph() {
  GraphBuilder b;
  int x = b.input("x");
  Tensor zero(DType::UInt8, {}), w(DType::Int8, {4, 4, 3, 3});
  zero.data<uint8_t>()[0] = 0;
  for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(i % 17 - 8);
  int s = b.constant("s", scalar(0.05f)), z = b.constant("z", zero);
  auto dq = [&](int q, const std::string& n) { return b.node(Op::DequantizeLinear, {q, s, z}, n); };
  auto q = [&](int v, const std::string& n) { return b.node(Op::QuantizeLinear, {v, s, z}, n, DType::UInt8); };
  int dw = b.node(Op::DequantizeLinear, {b.constant("w", w), b.constant("sw", scalar(0.01f))}, "dw");
  int conv = b.node(Op::Conv, {dq(q(x, "qx"), "dx"), dw}, "conv", DType::Float32,
                    {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}});
  int r = q(b.node(Op::Relu, {conv}, "r"), "qr");
  int pool = b.node(Op::MaxPool, {dq(r, "dr")}, "pool", DType::Float32, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}});
  int pooled = q(pool, "y");
  // quantize_dynamic's MatMul: MatMulInteger(q, W) -> Cast -> Mul(scale).
  Tensor wm(DType::Int8, {3, 5});
  for (int64_t i = 0; i < wm.numel(); ++i) wm.data<int8_t>()[i] = static_cast<int8_t>(i % 7 - 3);
  int acc = b.node(Op::MatMulInteger, {pooled, b.constant("wm", wm), z}, "acc", DType::Int32);
  int f = b.node(Op::Cast, {acc}, "f", DType::Float32, {{"to", DType::Float32}});
  return b.finish({b.node(Op::Mul, {f, b.constant("scale", filled({5}, 0.01f))}, "mm")});
}

// quantize_dynamic's MatMul with a bias, an activation and a residual after it:
// MatMulInteger(Q(x), W) -> Cast -> Mul(scale) -> Add(bias) -> Tanh -> Add(x).
std::shared_ptr<const Graph> quantized_epilogue_graph() {
  GraphBuilder b;
  int x = b.input("x");
  Tensor zero(DType::UInt8, {}), w(DType::Int8, {8, 8});
  zero.data<uint8_t>()[0] = 128;
  for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = static_cast<int8_t>(i % 11 - 5);
  int z = b.constant("z", zero);
  int q = b.node(Op::QuantizeLinear, {x, b.constant("s", scalar(0.05f)), z}, "q", DType::UInt8);
  int acc = b.node(Op::MatMulInteger, {q, b.constant("w", w), z}, "acc", DType::Int32);
  int f = b.node(Op::Cast, {acc}, "f", DType::Float32, {{"to", DType::Float32}});
  int scaled = b.node(Op::Mul, {f, b.constant("scale", filled({8}, 0.01f))}, "mm");
  int biased = b.node(Op::Add, {scaled, b.constant("bias", filled({8}, 0.1f))}, "biased");
  return b.finish({b.node(Op::Add, {b.node(Op::Tanh, {biased}, "t"), x}, "y")});
}

struct Case {
  const char* name;
  std::function<std::shared_ptr<const Graph>()> build;
  std::vector<Dims> inputs;  // float32, one per graph input
};

const Case kCases[] = {
    {"layer_norm", layer_norm_graph, {{2, 3, 8}}},
    {"gelu", gelu_graph, {{2, 8}}},
    {"epilogue", epilogue_graph, {{2, 3, 8}}},
    {"projections", projections_graph, {{2, 3, 8}}},
    {"conv", conv_graph, {{1, 4, 6, 6}}},
    {"attention", attention_graph, {{2, 5, 8}, {2, 5, 8}, {2, 5, 8}, {2, 1, 1, 5}}},
    {"elementwise", elementwise_graph, {{2, 8}}},
    {"quantized", quantized_graph, {{1, 4, 6, 6}}},
    {"quantized_epilogue", quantized_epilogue_graph, {{2, 3, 8}}},
    {"group_norm", [] { return test::group_norm_graph(); }, {{2, 8, 4, 4}}},
    {"rotary", [] { return test::rotary_graph(); }, {{2, 5, 8}, {5, 8}, {5, 8}}},
};

// The fused nodes of `g` and, recursively, of their bodies (a Gelu item inside an epilogue).
void collect_fused(const Graph& g, std::vector<const Node*>& out) {
  for (const Node& n : g.nodes) {
    if (n.op != Op::Fused) continue;
    out.push_back(&n);
    if (n.body) collect_fused(*n.body, out);
  }
}

TEST(FusedKindContract, EveryFusedNodeCarriesTheAttributesOfItsPassContract) {
  std::set<std::pair<FusedKind, std::string>> made;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto g = c.build();
    std::vector<TensorType> types;
    for (const Dims& d : c.inputs) types.push_back({DType::Float32, d});
    std::vector<Tensor> frozen(types.size());
    FusionResult r = run_fusion_passes(*g, types, frozen, FusionConfig{}, ref::evaluate);
    std::vector<const Node*> fused;
    collect_fused(*r.graph, fused);
    EXPECT_FALSE(fused.empty()) << "nothing fused";
    for (const Node* n : fused) {
      auto item = std::find_if(r.report.items.begin(), r.report.items.end(), [&](const FusionItem& i) { return i.name == n->name; });
      ASSERT_NE(item, r.report.items.end()) << n->describe() << " is no item of the report";
      auto kind = fused_kind_from_name(n->op_type);
      ASSERT_TRUE(kind) << n->describe() << ": op_type is no fused kind";
      EXPECT_EQ(item->kind, n->op_type);
      const KindContract* contract = fused_kind_contract(*kind, item->pass);
      ASSERT_NE(contract, nullptr) << item->pass << " makes " << n->op_type << ", which has no contract for it";
      EXPECT_EQ(contract_violation(*n, *contract), std::nullopt);
      made.insert({*kind, item->pass});
    }
  }
  for (const KindContract& c : fused_kind_contracts())
    EXPECT_TRUE(made.count({c.kind, std::string(c.pass)}))
        << "no case makes a " << fused_kind_name(c.kind) << " with " << c.pass << ": its contract is untested";
}

TEST(FusedKindContract, AViolationIsNamed) {
  const KindContract& ln = *fused_kind_contract(FusedKind::LayerNorm, "fuse_layer_norm");
  Node n;
  n.op = Op::Fused;
  n.op_type = "LayerNorm";
  n.name = "ln";
  n.attrs = {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}, {"has_scale", int64_t{1}}, {"has_bias", int64_t{1}}};
  EXPECT_EQ(contract_violation(n, ln), std::nullopt);
  n.attrs["epsilon"] = int64_t{0};
  EXPECT_NE(contract_violation(n, ln).value_or("").find("'epsilon' is not of type float"), std::string::npos);
  n.attrs.erase("epsilon");
  EXPECT_NE(contract_violation(n, ln).value_or("").find("lacks attribute 'epsilon'"), std::string::npos);
  n.attrs["epsilon"] = 1e-5f;
  n.attrs["momentum"] = 0.9f;
  EXPECT_NE(contract_violation(n, ln).value_or("").find("'momentum', which its contract does not list"), std::string::npos);
}

TEST(FusedKinds, NamesRoundTripAndEveryKindHasAContractFromARealPass) {
  const std::vector<std::string> passes = fusion_pass_names();
  std::set<std::string> names;
  for (const FusedKindInfo& k : all_fused_kinds()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " twice";
    EXPECT_EQ(fused_kind_from_name(k.name), k.kind);
    EXPECT_STREQ(fused_kind_name(k.kind), k.name);
    EXPECT_FALSE(std::string(k.description).empty());
    bool has_contract = false;
    for (const KindContract& c : fused_kind_contracts()) has_contract = has_contract || c.kind == k.kind;
    EXPECT_TRUE(has_contract) << k.name << " has no contract: no pass makes it";
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(FusedKind::Count));
  EXPECT_EQ(fused_kind_from_name("Relu"), std::nullopt);
  for (const KindContract& c : fused_kind_contracts())
    EXPECT_NE(std::find(passes.begin(), passes.end(), c.pass), passes.end()) << c.pass << " is no pipeline pass";
}

}  // namespace
}  // namespace fusor
