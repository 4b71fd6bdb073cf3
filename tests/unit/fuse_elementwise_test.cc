// The generic elementwise fusion: which groups the pass forms and which it declines (with
// reasons), and that the fused kernel computes what the reference plan computes, for chains,
// diamonds, broadcasts, multi-output groups, compares and Where, and casts.
#include <gtest/gtest.h>

#include <random>

#include "ir/elementwise.h"
#include "kernels/cpu/common.h"
#include "fused_vs_reference.h"
#include "graph_builder.h"

namespace fusor {
namespace {

Tensor random_tensor(DType t, const Dims& dims, unsigned seed) {
  Tensor x(t, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t == DType::Float32) x.data<float>()[i] = u(rng);
    else if (t == DType::Bool) x.data<bool>()[i] = u(rng) > 0;
    else if (t == DType::Int64) x.data<int64_t>()[i] = u(rng) > 0 ? 1 : 0;
  }
  return x;
}

Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

std::vector<const Node*> fused_nodes(const Plan& p, const std::string& kind = "Elementwise") {
  std::vector<const Node*> out;
  for (const Node& n : p.graph->nodes)
    if (n.op == Op::Fused && n.op_type == kind) out.push_back(&n);
  return out;
}

// Kernel names of the plan's Elementwise steps.
std::vector<std::string> elementwise_kernels(const Plan& p) {
  std::vector<std::string> names;
  for (const Step& s : p.steps) {
    const Node& n = p.graph->nodes[static_cast<size_t>(s.node)];
    if (n.op == Op::Fused && n.op_type == "Elementwise") names.push_back(s.kernel->name());
  }
  return names;
}

bool declined(const Plan& p, const std::string& reason_part) {
  for (const NotFused& nf : p.fusion.not_fused)
    if (nf.pass == "fuse_elementwise" && nf.reason.find(reason_part) != std::string::npos) return true;
  return false;
}

// Random inputs of the named types, seeded by their position.
test::Feeds random_feeds(const std::vector<std::pair<std::string, TensorType>>& types) {
  test::Feeds feeds;
  unsigned seed = 1;
  for (const auto& [name, t] : types) feeds[name] = random_tensor(t.dtype, t.dims, seed++);
  return feeds;
}

// Elementwise programs compute what the reference computes element by element: they are held to
// the gate's strict rule rather than the looser twin rule of reordered sums.
const Tolerance kStrict = tolerance_for(PrecisionCheck::Strict);

TensorType f32(Dims d) { return {DType::Float32, std::move(d)}; }

// y = Sigmoid(Relu(x * 2 + 1) - 0.5)
std::shared_ptr<const Graph> chain() {
  test::GraphBuilder b;
  int x = b.input("x");
  int two = b.constant("two", scalar(2)), one = b.constant("one", scalar(1)), half = b.constant("half", scalar(.5f));
  int m = b.node(Op::Mul, {x, two}, "m");
  int a = b.node(Op::Add, {m, one}, "a");
  int r = b.node(Op::Relu, {a}, "r");
  int s = b.node(Op::Sub, {r, half}, "s");
  return b.finish({b.node(Op::Sigmoid, {s}, "y")});
}

TEST(FuseElementwise, ChainBecomesOneKernel) {
  auto g = chain();
  for (Dims d : {Dims{4, 1000}, Dims{3, 5, 7}, Dims{1}, Dims{}}) {
    auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32(d)}}), FusionConfig{}, kStrict);
    const Plan& p = r.fused;
    ASSERT_EQ(fused_nodes(p).size(), 1u) << dims_to_string(d);
    EXPECT_EQ(fused_nodes(p)[0]->body->nodes.size(), 5u);
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_EQ(elementwise_kernels(p), std::vector<std::string>{std::string("elementwise_f32_5ops_") + cpu::kIsa});
  }
}

// A value used twice inside the group, and exp/erf/tanh/log/gelu-like math.
TEST(FuseElementwise, DiamondWithTranscendentals) {
  test::GraphBuilder b;
  int x = b.input("x");
  int one = b.constant("one", scalar(1));
  int a = b.node(Op::Add, {x, one}, "a");
  int t = b.node(Op::Tanh, {a}, "t");
  int e = b.node(Op::Erf, {a}, "e");
  int ex = b.node(Op::Exp, {t}, "ex");
  int l = b.node(Op::Log, {b.node(Op::Abs, {e}, "ae")}, "l");
  int y = b.node(Op::Mul, {ex, b.node(Op::Add, {l, a}, "la")}, "y");
  auto g = b.finish({y});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({17, 33})}}), FusionConfig{}, kStrict);
  ASSERT_EQ(fused_nodes(r.fused).size(), 1u);
  EXPECT_EQ(fused_nodes(r.fused)[0]->body->nodes.size(), 8u);
}

// y = Relu(x * col + row) / s: a bias row [N], a per-row column [M,1] and a runtime scalar.
std::shared_ptr<const Graph> broadcasts() {
  test::GraphBuilder b;
  int x = b.input("x"), row = b.input("row"), col = b.input("col"), s = b.input("s");
  int m = b.node(Op::Mul, {x, col}, "m");
  int a = b.node(Op::Add, {m, row}, "a");
  int r = b.node(Op::Relu, {a}, "r");
  return b.finish({b.node(Op::Div, {r, s}, "y")});
}

TEST(FuseElementwise, BroadcastRowsColumnsAndScalars) {
  auto g = broadcasts();
  // Long rows (row tiles), short rows (flat tiles with gathered operands), a leading batch dim.
  for (Dims xd : {Dims{8, 384}, Dims{64, 5}, Dims{3, 9, 130}, Dims{2, 7, 3}}) {
    Dims row{xd.back()}, col = xd;
    col.back() = 1;
    auto r = test::expect_fused_matches_reference(
        g, random_feeds({{"x", f32(xd)}, {"row", f32(row)}, {"col", f32(col)}, {"s", f32({})}}), FusionConfig{}, kStrict);
    ASSERT_EQ(fused_nodes(r.fused).size(), 1u) << dims_to_string(xd);
    ASSERT_EQ(elementwise_kernels(r.fused).size(), 1u);
    EXPECT_NE(elementwise_kernels(r.fused)[0].find("_bcast_"), std::string::npos);
  }
}

// The attention-mask shape: [B,1,1,S] over [B,H,S,S], the mask made from int64 by a Cast.
TEST(FuseElementwise, MaskFromIntsBroadcastsOverScores) {
  test::GraphBuilder b;
  int scores = b.input("scores"), mask = b.input("mask", DType::Int64);
  int one = b.constant("one", scalar(1)), big = b.constant("big", scalar(-10000.f)), k = b.constant("k", scalar(.125f));
  int mf = b.node(Op::Cast, {mask}, "mf", DType::Float32, {{"to", DType::Float32}});
  int inv = b.node(Op::Sub, {one, mf}, "inv");
  int add = b.node(Op::Mul, {inv, big}, "add");
  int scaled = b.node(Op::Mul, {scores, k}, "scaled");
  auto g = b.finish({b.node(Op::Add, {scaled, add}, "y")});
  for (int64_t s : {7, 128}) {
    auto r = test::expect_fused_matches_reference(
        g, random_feeds({{"scores", f32({2, 3, s, s})}, {"mask", {DType::Int64, {2, 1, 1, s}}}}), FusionConfig{}, kStrict);
    ASSERT_EQ(fused_nodes(r.fused).size(), 1u) << s;
    EXPECT_EQ(fused_nodes(r.fused)[0]->body->nodes.size(), 5u);
    ASSERT_EQ(elementwise_kernels(r.fused).size(), 1u);
  }
}

// a = x * 2 is both a graph output and read inside the group: a second output.
TEST(FuseElementwise, ValueUsedOutsideBecomesAnExtraOutput) {
  test::GraphBuilder b;
  int x = b.input("x");
  int two = b.constant("two", scalar(2));
  int a = b.node(Op::Mul, {x, two}, "a");
  int t = b.node(Op::Tanh, {a}, "t");
  int y = b.node(Op::Add, {t, x}, "y");
  auto g = b.finish({y, a});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({5, 300})}}), FusionConfig{}, kStrict);
  ASSERT_EQ(fused_nodes(r.fused).size(), 1u);
  EXPECT_EQ(fused_nodes(r.fused)[0]->outputs.size(), 2u);
  EXPECT_EQ(r.fused.steps.size(), 1u);
}

// y = Where(x > 0, x, 0.1 * x) + Cast(Not(b)) with b a bool input; compares stay inside.
TEST(FuseElementwise, CompareWhereNotAndCasts) {
  test::GraphBuilder b;
  int x = b.input("x"), flag = b.input("flag", DType::Bool);
  int zero = b.constant("zero", scalar(0)), tenth = b.constant("tenth", scalar(.1f));
  int pos = b.node(Op::Greater, {x, zero}, "pos", DType::Bool);
  int small = b.node(Op::Mul, {x, tenth}, "small");
  int w = b.node(Op::Where, {pos, x, small}, "w");
  int nf = b.node(Op::Not, {flag}, "nf", DType::Bool);
  int eq = b.node(Op::Equal, {nf, b.node(Op::Less, {x, tenth}, "lt", DType::Bool)}, "eq", DType::Bool);
  int c = b.node(Op::Cast, {eq}, "c", DType::Float32, {{"to", DType::Float32}});
  int xb = b.node(Op::Cast, {w}, "xb", DType::Bool, {{"to", DType::Bool}});
  int cb = b.node(Op::Cast, {xb}, "cb", DType::Float32, {{"to", DType::Float32}});
  auto g = b.finish({b.node(Op::Add, {b.node(Op::Add, {w, c}, "wc"), cb}, "y")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({6, 200})}, {"flag", {DType::Bool, {200}}}}),
                                                FusionConfig{}, kStrict);
  ASSERT_EQ(fused_nodes(r.fused).size(), 1u);
  EXPECT_EQ(fused_nodes(r.fused)[0]->body->nodes.size(), 11u);
  EXPECT_EQ(r.fused.steps.size(), 1u);
}

TEST(FuseElementwise, ActivationsWithAttributesAndPow) {
  test::GraphBuilder b;
  int x = b.input("x"), e = b.input("e");
  int three = b.constant("three", scalar(3)), lo = b.constant("lo", scalar(-1)), hi = b.constant("hi", scalar(2));
  int l = b.node(Op::LeakyRelu, {x}, "l", DType::Float32, {{"alpha", 0.3f}});
  int h = b.node(Op::HardSigmoid, {l}, "h", DType::Float32, {{"alpha", 0.25f}, {"beta", 0.4f}});
  int clip = b.node(Op::Clip, {b.node(Op::Pow, {x, three}, "cube2"), lo, hi}, "clip");
  int sw = b.node(Op::HardSwish, {clip}, "sw");
  int pw = b.node(Op::Pow, {b.node(Op::Abs, {x}, "ax"), e}, "pw");  // tensor exponent
  int y = b.node(Op::Add, {b.node(Op::Add, {h, sw}, "hs"), b.node(Op::Sqrt, {pw}, "sq")}, "y");
  auto g = b.finish({y, b.node(Op::Reciprocal, {b.node(Op::Neg, {y}, "ny")}, "ry")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({4, 77})}, {"e", f32({77})}}), FusionConfig{},
                                                kStrict);
  EXPECT_EQ(fused_nodes(r.fused).size(), 1u);
}

// Each op of the elementwise table as the middle of y = op(x * scale) + x, one fused kernel,
// against the reference plan. x is in [-3, 3]; `scale` stretches it over the op's range (for
// Softplus, Mish and Elu far past where exp overflows in float). One line per case.
struct UnaryCase {
  const char* name;
  Op op;
  std::map<std::string, Attribute> attrs = {};
  float scale = 1;
};

const UnaryCase kUnaryCases[] = {
    {"relu", Op::Relu}, {"neg", Op::Neg}, {"abs", Op::Abs}, {"sqrt", Op::Sqrt}, {"reciprocal", Op::Reciprocal},
    {"exp", Op::Exp}, {"log", Op::Log}, {"erf", Op::Erf, {}, 2}, {"tanh", Op::Tanh, {}, 10},
    {"sigmoid", Op::Sigmoid, {}, 40},
    {"gelu", Op::Gelu, {}, 3},
    {"gelu_tanh", Op::Gelu, {{"approximate", std::string("tanh")}}, 3},
    {"hard_sigmoid", Op::HardSigmoid, {{"alpha", 0.3f}, {"beta", 0.4f}}, 3},
    {"hard_swish", Op::HardSwish, {}, 3},
    {"leaky_relu", Op::LeakyRelu, {{"alpha", 0.2f}}},
    {"softplus", Op::Softplus, {}, 40},
    {"mish", Op::Mish, {}, 40},
    {"elu", Op::Elu, {{"alpha", 0.7f}}, 40},
    {"floor", Op::Floor, {}, 3}, {"ceil", Op::Ceil, {}, 3}, {"round", Op::Round, {}, 3}, {"sign", Op::Sign},
    {"sin", Op::Sin, {}, 10}, {"cos", Op::Cos, {}, 10}, {"tan", Op::Tan, {}, 0.4f},
    {"asin", Op::Asin, {}, 0.3f}, {"acos", Op::Acos, {}, 0.3f}, {"atan", Op::Atan, {}, 10},
    {"sinh", Op::Sinh, {}, 10}, {"cosh", Op::Cosh, {}, 10}, {"asinh", Op::Asinh, {}, 10},
    {"acosh", Op::Acosh, {}, 10}, {"atanh", Op::Atanh, {}, 0.3f},
    {"selu", Op::Selu, {}, 10}, {"celu", Op::Celu, {{"alpha", 2.f}}, 10}, {"softsign", Op::Softsign, {}, 10},
    {"thresholded_relu", Op::ThresholdedRelu, {{"alpha", 0.5f}}}, {"shrink", Op::Shrink, {{"lambd", 1.f}, {"bias", 0.5f}}},
};

void PrintTo(const UnaryCase& c, std::ostream* os) { *os << c.name; }

class FusedUnary : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(FusedUnary, MatchesReference) {
  const UnaryCase& c = GetParam();
  test::GraphBuilder b;
  int x = b.input("x");
  int m = b.node(Op::Mul, {x, b.constant("scale", scalar(c.scale))}, "m");
  int u = b.node(c.op, {m}, "u", DType::Float32, c.attrs);
  auto g = b.finish({b.node(Op::Add, {u, x}, "y")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({5, 203})}}), FusionConfig{}, kStrict);
  EXPECT_EQ(elementwise_kernels(r.fused), std::vector<std::string>{std::string("elementwise_f32_3ops_") + cpu::kIsa});
}

INSTANTIATE_TEST_SUITE_P(Table, FusedUnary, ::testing::ValuesIn(kUnaryCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Clamps and PRelu as real models have them (T5's min/max clamps, YOLO's PRelu), with Sin: one
// kernel, the reference's numbers (NaN-propagating min and max included).
TEST(FuseElementwise, MinMaxPReluAndSin) {
  test::GraphBuilder b;
  int x = b.input("x"), floor = b.input("floor");
  Tensor slope(DType::Float32, {7});
  for (int64_t i = 0; i < 7; ++i) slope.data<float>()[i] = 0.1f * static_cast<float>(i);
  int s = b.node(Op::Sin, {x}, "s");
  int lo = b.node(Op::Min, {s, b.constant("half", scalar(0.5f))}, "lo");
  int hi = b.node(Op::Max, {lo, floor}, "hi");
  int p = b.node(Op::PRelu, {hi, b.constant("slope", slope)}, "p");
  int m = b.node(Op::Max, {p}, "m");  // one operand: a copy
  auto g = b.finish({b.node(Op::Add, {m, x}, "y")});
  auto feeds = random_feeds({{"x", f32({9, 7})}, {"floor", f32({9, 1})}});
  feeds["x"].data<float>()[3] = NAN;
  feeds["floor"].data<float>()[2] = NAN;
  auto r = test::expect_fused_matches_reference(g, feeds, FusionConfig{}, kStrict);
  EXPECT_EQ(elementwise_kernels(r.fused), std::vector<std::string>{std::string("elementwise_f32_6ops_bcast_") + cpu::kIsa});
}

// Elementwise ops the kernel does not run (Mod, a Max of three operands) are never members, so
// the pass forms no group that the kernel then declines; the pass says why.
TEST(FuseElementwise, OpsTheKernelDoesNotRunStayOut) {
  test::GraphBuilder b;
  int x = b.input("x");
  int n = b.node(Op::Neg, {x}, "n");
  int mod = b.node(Op::Mod, {n, b.constant("three", scalar(3))}, "mod", DType::Float32, {{"fmod", int64_t{1}}});
  int abs = b.node(Op::Abs, {mod}, "abs");
  auto g = b.finish({b.node(Op::Max, {abs, x, n}, "y")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({4, 16})}}), FusionConfig{}, kStrict);
  EXPECT_TRUE(declined(r.fused, "is not an op the fused elementwise kernel runs"));
  EXPECT_TRUE(fused_nodes(r.fused).empty());
  for (const NotFused& nf : r.fused.fusion.not_fused) EXPECT_NE(nf.pass, "plan") << nf.reason;
}

// Outputs over 16 MiB are streamed past the caches: same numbers.
TEST(FuseElementwise, LargeOutputsAreStreamed) {
  auto g = chain();
  Dims d{1030, 4099};  // 16.1 MiB, rows not a multiple of the vector
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32(d)}}), FusionConfig{}, kStrict);
  EXPECT_EQ(fused_nodes(r.fused).size(), 1u);
}

// A GELU the pattern pass fused joins the bias add in front of it.
TEST(FuseElementwise, FusedGeluIsAMember) {
  test::GraphBuilder b;
  int x = b.input("x"), bias = b.input("bias");
  int s2 = b.constant("sqrt2", scalar(1.4142135f)), one = b.constant("one", scalar(1)), half = b.constant("half", scalar(.5f));
  int a = b.node(Op::Add, {x, bias}, "a");
  int e = b.node(Op::Erf, {b.node(Op::Div, {a, s2}, "d")}, "e");
  int m = b.node(Op::Mul, {a, b.node(Op::Add, {e, one}, "e1")}, "m");
  auto g = b.finish({b.node(Op::Mul, {m, half}, "y")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({3, 64})}, {"bias", f32({64})}}),
                                                FusionConfig{}, kStrict);
  ASSERT_EQ(fused_nodes(r.fused).size(), 1u);
  const Graph& body = *fused_nodes(r.fused)[0]->body;
  ASSERT_EQ(body.nodes.size(), 2u);
  EXPECT_EQ(body.nodes[1].op_type, "Gelu");
  EXPECT_EQ(r.fused.steps.size(), 1u);
}

// ---- declines ----------------------------------------------------------------------------

// A small intermediate read outside the group would have to leave it with a partial shape.
TEST(FuseElementwise, DeclinesAnOutputOfAnotherShape) {
  test::GraphBuilder b;
  int x = b.input("x"), row = b.input("row");
  int two = b.constant("two", scalar(2));
  int r2 = b.node(Op::Mul, {row, two}, "r2");
  int y = b.node(Op::Relu, {b.node(Op::Add, {x, r2}, "a")}, "y");
  auto g = b.finish({y, r2});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({4, 32})}, {"row", f32({32})}}),
                                                FusionConfig{}, kStrict);
  EXPECT_TRUE(declined(r.fused, "not the iteration shape [4, 32]"));
  ASSERT_EQ(fused_nodes(r.fused).size(), 1u);  // Add + Relu still fuse
  EXPECT_EQ(fused_nodes(r.fused)[0]->body->nodes.size(), 2u);
}

// Relu -> MatMul -> Add(Relu's output, ...): Relu and Add would enclose the MatMul.
TEST(FuseElementwise, DeclinesACycle) {
  test::GraphBuilder b;
  int x = b.input("x");
  Tensor w(DType::Float32, {8, 8});
  for (int i = 0; i < 64; ++i) w.data<float>()[i] = static_cast<float>(i % 5) * 0.1f;
  int r = b.node(Op::Relu, {x}, "r");
  int mm = b.node(Op::MatMul, {r, b.constant("w", w)}, "mm");
  auto g = b.finish({b.node(Op::Add, {r, mm}, "y")});
  Plan p = test::fast_plan(g, {{"x", {8, 8}}});
  EXPECT_TRUE(declined(p, "cycle"));
  EXPECT_TRUE(fused_nodes(p).empty());
}

// Integer arithmetic is not the kernel's: said, and left alone.
TEST(FuseElementwise, DeclinesIntegerArithmetic) {
  test::GraphBuilder b;
  int x = b.input("x"), i = b.input("i", DType::Int64);
  int ii = b.node(Op::Add, {i, i}, "ii", DType::Int64);
  int c = b.node(Op::Cast, {ii}, "c", DType::Float32, {{"to", DType::Float32}});
  auto g = b.finish({b.node(Op::Relu, {b.node(Op::Mul, {x, c}, "m")}, "y")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({4, 16})}, {"i", {DType::Int64, {4, 16}}}}),
                                                FusionConfig{}, kStrict);
  EXPECT_TRUE(declined(r.fused, "makes int64"));
  ASSERT_EQ(fused_nodes(r.fused).size(), 1u);  // Cast (reading int64 from outside), Mul, Relu
  EXPECT_EQ(fused_nodes(r.fused)[0]->body->nodes.size(), 3u);
}

// A bool result that leaves the group cannot be an output of the float kernel.
TEST(FuseElementwise, DeclinesABoolOutput) {
  test::GraphBuilder b;
  int x = b.input("x");
  int n = b.node(Op::Neg, {x}, "n");
  auto g = b.finish({b.node(Op::Greater, {n, b.constant("zero", scalar(0))}, "pos", DType::Bool)});
  Plan p = test::fast_plan(g, {{"x", {4, 16}}});
  EXPECT_TRUE(declined(p, "would leave the group as bool, not float32"));
  EXPECT_TRUE(fused_nodes(p).empty());
}

// An expensive op (the elementwise table says which) on a small value is not recomputed for
// every element it broadcasts to.
TEST(FuseElementwise, DeclinesRecomputingAnExpensiveSmallValue) {
  for (Op op : kUnaryTableOps) {
    if (!elementwise_cost(op).expensive) continue;
    SCOPED_TRACE(op_info(op).name);
    test::GraphBuilder b;
    int x = b.input("x"), row = b.input("row");
    int e = b.node(op, {row}, "e");
    auto g = b.finish({b.node(Op::Neg, {b.node(Op::Add, {x, e}, "a")}, "y")});
    auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({64, 32})}, {"row", f32({32})}}),
                                                  FusionConfig{}, kStrict);
    EXPECT_TRUE(declined(r.fused, "would be recomputed for every element of [64, 32]"));
    ASSERT_EQ(fused_nodes(r.fused).size(), 1u);  // Add + Neg
    EXPECT_EQ(fused_nodes(r.fused)[0]->body->nodes.size(), 2u);
  }
}

// Bounded fusion: a 40-op chain becomes a 32-node group and an 8-node group.
TEST(FuseElementwise, GroupsAreCapped) {
  test::GraphBuilder b;
  int v = b.input("x");
  for (int i = 0; i < 40; ++i) v = b.node(i % 2 ? Op::Neg : Op::Abs, {v}, "v" + std::to_string(i));
  auto g = b.finish({v});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({2, 50})}}), FusionConfig{}, kStrict);
  auto fused = fused_nodes(r.fused);
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0]->body->nodes.size() + fused[1]->body->nodes.size(), 40u);
  EXPECT_LE(std::max(fused[0]->body->nodes.size(), fused[1]->body->nodes.size()), 32u);
  EXPECT_TRUE(declined(r.fused, "exceed 32 nodes"));
}

// The pass takes a Clip bound that is a runtime input; the kernel's compiler does not. The plan
// puts the nodes back and reports the compiler's reason, not a generic one.
TEST(FuseElementwise, AKernelDeclineIsReportedWithTheCompilersReason) {
  test::GraphBuilder b;
  int x = b.input("x"), lo = b.input("lo");
  auto g = b.finish({b.node(Op::Clip, {b.node(Op::Relu, {x}, "r"), lo}, "y")});
  auto r = test::expect_fused_matches_reference(g, random_feeds({{"x", f32({4, 16})}, {"lo", f32({})}}), FusionConfig{},
                                                kStrict);
  EXPECT_TRUE(fused_nodes(r.fused).empty());
  std::vector<std::string> plan_reasons;
  for (const NotFused& nf : r.fused.fusion.not_fused)
    if (nf.pass == "plan") plan_reasons.push_back(nf.reason);
  EXPECT_EQ(plan_reasons, std::vector<std::string>{
                              "no fast Elementwise kernel: node 'Clip_y' (op Clip): bounds must be scalar constants"});
}

// Off in the config: nothing fused.
TEST(FuseElementwise, SwitchedOff) {
  FusionConfig off;
  off.fuse_elemwise = false;
  auto r = test::expect_fused_matches_reference(chain(), random_feeds({{"x", f32({4, 16})}}), off, kStrict);
  EXPECT_TRUE(fused_nodes(r.fused).empty());
  EXPECT_EQ(r.fused.steps.size(), 5u);
}

}  // namespace
}  // namespace fusor
