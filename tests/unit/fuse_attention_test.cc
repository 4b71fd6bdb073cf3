// fuse_attention on hand-built attention graphs: the fused plan (attention kernel) against the
// unfused reference plan on random inputs, for padding masks on either side, causal masks,
// sequence 1, odd lengths and sequences longer than one query or key block; near misses are
// declined with their reason and stay correct.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "fused_vs_reference.h"
#include "graph_builder.h"

namespace fusor {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

enum class Causal { None, Where, MaskedFill };  // Where(allowed, s, fill) or Where(masked, fill, s)

struct Spec {
  int64_t B = 2, S = 16, H = 2, D = 8;
  bool mask = true;
  Dims mask_dims;  // default [B,1,1,S]
  Causal causal = Causal::None;
  float fill = kNegInf;
  bool scale_by_mul = false;
  // Near misses.
  int64_t softmax_axis = -1;
  bool scale_after_mask = false;
  bool anti_causal = false;       // a Where condition that is not causal
  bool k_two_transposes = false;  // [0,2,1,3] then [0,1,3,2]: still K^T
  bool output_perm_wrong = false;  // [0,2,3,1] instead of [0,2,1,3]
};

Tensor ints(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}
Tensor scalar(float x) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = x;
  return t;
}

// q, k, v [B,S,H*D] -> heads -> softmax(scale * q k^T (+ causal) (+ mask)) v -> [B,S,H*D]. The
// output Reshape's target comes from Shape of the transposed output, as in BERT exports.
std::shared_ptr<const Graph> attention_graph(const Spec& s) {
  test::GraphBuilder b;
  const int64_t hd = s.H * s.D;
  int q = b.input("q"), k = b.input("k"), v = b.input("v");
  int split = b.constant("split", ints({0, 0, s.H, s.D}));
  auto heads = [&](int x, const std::string& n, std::vector<int64_t> perm) {
    int r = b.node(Op::Reshape, {x, split}, n + "_heads");
    return b.node(Op::Transpose, {r}, n + "_t", DType::Float32, {{"perm", perm}});
  };
  int qt = heads(q, "q", {0, 2, 1, 3});
  int kt = s.k_two_transposes
               ? b.node(Op::Transpose, {heads(k, "k", {0, 2, 1, 3})}, "k_tt", DType::Float32, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})
               : heads(k, "k", {0, 2, 3, 1});
  int vt = heads(v, "v", {0, 2, 1, 3});
  int x = b.node(Op::MatMul, {qt, kt}, "scores");
  auto scale = [&](int in) {
    return s.scale_by_mul ? b.node(Op::Mul, {b.constant("scale", scalar(1.f / std::sqrt(float(s.D)))), in}, "scaled")
                          : b.node(Op::Div, {in, b.constant("sqrt_d", scalar(std::sqrt(float(s.D))))}, "scaled");
  };
  if (!s.scale_after_mask) x = scale(x);
  if (s.causal != Causal::None) {
    Tensor cond(DType::Bool, {1, 1, s.S, s.S});
    const bool masked_when_true = s.causal == Causal::MaskedFill;
    for (int64_t i = 0; i < s.S; ++i)
      for (int64_t j = 0; j < s.S; ++j)
        cond.data<bool>()[i * s.S + j] = ((s.anti_causal ? j >= i : j <= i) != masked_when_true);
    int c = b.constant("causal", cond), f = b.constant("fill", scalar(s.fill));
    x = masked_when_true ? b.node(Op::Where, {c, f, x}, "causal_scores") : b.node(Op::Where, {c, x, f}, "causal_scores");
  }
  if (s.mask) x = b.node(Op::Add, {x, b.input("mask")}, "masked");
  if (s.scale_after_mask) x = scale(x);
  int p = b.node(Op::Softmax, {x}, "probs", DType::Float32, {{"axis", s.softmax_axis}});
  int ctx = b.node(Op::MatMul, {p, vt}, "context");
  std::vector<int64_t> back = s.output_perm_wrong ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3};
  int t = b.node(Op::Transpose, {ctx}, "context_t", DType::Float32, {{"perm", back}});
  int shape = b.node(Op::Shape, {t}, "context_shape", DType::Int64);
  int bs = b.node(Op::Gather, {shape, b.constant("first_two", ints({0, 1}))}, "batch_seq", DType::Int64, {{"axis", int64_t{0}}});
  int target = b.node(Op::Concat, {bs, b.constant("hidden", ints({hd}))}, "merge", DType::Int64, {{"axis", int64_t{0}}});
  return b.finish({b.node(Op::Reshape, {t, target}, "out")});
}

enum class Pad { None, Right, Left, AllMasked };

std::map<std::string, Tensor> inputs_for(const Spec& s, Pad pad, float masked_value, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::map<std::string, Tensor> in;
  for (const char* n : {"q", "k", "v"}) {
    Tensor t(DType::Float32, {s.B, s.S, s.H * s.D});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    in[n] = std::move(t);
  }
  if (s.mask) {
    Dims md = s.mask_dims.empty() ? Dims{s.B, 1, 1, s.S} : s.mask_dims;
    Tensor m(DType::Float32, md);
    if (!s.mask_dims.empty()) {  // an arbitrary additive bias (relative positions, ALiBi)
      for (int64_t i = 0; i < m.numel(); ++i) m.data<float>()[i] = 3.f * normal(rng);
      in["mask"] = std::move(m);
      return in;
    }
    const int64_t last = md.back(), rows = m.numel() / last;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < last; ++j) {
        const int64_t batch = r / (rows / md[0]);
        const int64_t len = std::max<int64_t>(1, last - 3 * (batch + 1));  // batch b keeps `len` positions
        bool masked = pad == Pad::Right ? j >= len : pad == Pad::Left ? j < last - len : pad == Pad::AllMasked && batch == 1;
        m.data<float>()[r * last + j] = masked ? masked_value : 0.f;
      }
    in["mask"] = std::move(m);
  }
  return in;
}

// The fused plan (every fusion switch on) and the reference plan on the same inputs.
test::FusedAndReference run_both(const Spec& s, Pad pad = Pad::Right, float masked_value = -10000.f) {
  return test::run_fused_and_reference(attention_graph(s), inputs_for(s, pad, masked_value, 7));
}

void expect_close(const test::FusedAndReference& o) {
  EXPECT_TRUE(test::outputs_agree(o.fused_outputs, o.reference_outputs)) << "kernels: " << o.kernels();
}

std::string attention_kernel(const Plan& p) {
  for (const Step& s : p.steps)
    if (s.kernel->name().rfind("attention_", 0) == 0) return s.kernel->name();
  return "";
}

void expect_fused(const Spec& s, Pad pad = Pad::Right, float masked_value = -10000.f) {
  auto o = run_both(s, pad, masked_value);
  std::string declined;
  for (const NotFused& nf : o.fused.fusion.not_fused) declined += nf.pass + ": " + nf.reason + "\n";
  ASSERT_EQ(o.fused.fusion.items.size(), 1u) << declined;
  EXPECT_EQ(o.fused.fusion.items[0].kind, "Attention") << declined;
  EXPECT_NE(attention_kernel(o.fused), "") << "the fused node fell back to the reference";
  // Reshapes, Transposes, both MatMuls, scale, mask, softmax and the Shape subgraph are gone.
  EXPECT_EQ(o.fused.steps.size(), 1u);
  expect_close(o);
}

void expect_declined(const Spec& s, const std::string& reason) {
  auto o = run_both(s);
  EXPECT_EQ(attention_kernel(o.fused), "");
  for (const FusionItem& item : o.fused.fusion.items) EXPECT_NE(item.kind, "Attention");
  bool found = false;
  for (const NotFused& nf : o.fused.fusion.not_fused)
    found = found || (nf.pass == "fuse_attention" && nf.reason.find(reason) != std::string::npos);
  EXPECT_TRUE(found) << "no decline mentioning '" << reason << "'";
  expect_close(o);
}

TEST(FuseAttention, RightPaddingMask) { expect_fused({}); }
TEST(FuseAttention, LeftPaddingMask) { expect_fused({}, Pad::Left); }
TEST(FuseAttention, NoMaskScaleByMul) { expect_fused({.mask = false, .scale_by_mul = true}); }
TEST(FuseAttention, HeadDim32NamesTheKernel) {
  Spec s{.B = 1, .S = 20, .H = 3, .D = 32};
  auto o = run_both(s);
  EXPECT_EQ(attention_kernel(o.fused).rfind("attention_f32_d32_mask_", 0), 0u) << attention_kernel(o.fused);
  expect_close(o);
}
TEST(FuseAttention, OddHeadDimAndLength) { expect_fused({.B = 3, .S = 7, .H = 3, .D = 12}, Pad::Left); }
TEST(FuseAttention, SequenceOne) { expect_fused({.B = 2, .S = 1, .H = 4, .D = 16}, Pad::None); }
TEST(FuseAttention, ManyQueryBlocks) { expect_fused({.B = 1, .S = 200, .H = 2, .D = 32}, Pad::Left); }
TEST(FuseAttention, ManyKeyBlocks) { expect_fused({.B = 1, .S = 300, .H = 1, .D = 16}); }
TEST(FuseAttention, MaskOverQueries) { expect_fused({.B = 2, .S = 9, .mask_dims = {2, 1, 9, 1}}, Pad::Right); }
TEST(FuseAttention, FullMask) { expect_fused({.B = 2, .S = 9, .mask_dims = {2, 2, 9, 9}}, Pad::Right); }
TEST(FuseAttention, KeyTransposedTwice) { expect_fused({.k_two_transposes = true}); }

// A row whose keys are all masked: uniform weights with a finite mask value, NaN with -inf,
// exactly as the unfused softmax gives.
TEST(FuseAttention, FullyMaskedRowsMatchTheReference) {
  expect_fused({.B = 2, .S = 5}, Pad::AllMasked, -10000.f);
  expect_fused({.B = 2, .S = 5}, Pad::AllMasked, std::numeric_limits<float>::lowest());
  expect_fused({.B = 2, .S = 5}, Pad::AllMasked, kNegInf);
}

TEST(FuseAttention, CausalWhere) {
  expect_fused({.S = 11, .mask = false, .causal = Causal::Where});
  expect_fused({.B = 1, .S = 300, .H = 1, .D = 8, .mask = false, .causal = Causal::Where});
}
TEST(FuseAttention, CausalMaskedFillWithPadding) {
  // A finite fill plus left padding: early rows see only padded keys, so the masked keys'
  // values matter; the kernel must give what the graph gives.
  expect_fused({.S = 13, .causal = Causal::MaskedFill, .fill = -1e9f}, Pad::Left, std::numeric_limits<float>::lowest());
  expect_fused({.S = 70, .causal = Causal::MaskedFill}, Pad::Left);
}
TEST(FuseAttention, CausalKernelName) {
  auto o = run_both({.S = 8, .mask = false, .causal = Causal::Where});
  EXPECT_NE(attention_kernel(o.fused).find("_causal_"), std::string::npos) << attention_kernel(o.fused);
}

TEST(FuseAttention, DeclinesSoftmaxOverAnotherAxis) {
  expect_declined({.S = 8, .H = 8, .D = 8, .softmax_axis = 2}, "softmax over axis 2");
}
TEST(FuseAttention, DeclinesScaleAfterMask) { expect_declined({.scale_after_mask = true}, "scaled after the mask"); }
TEST(FuseAttention, DeclinesNonCausalWhere) {
  expect_declined({.mask = false, .causal = Causal::Where, .anti_causal = true}, "is not a causal mask");
}
TEST(FuseAttention, DeclinesOutputNotTransposedBack) {
  expect_declined({.S = 8, .H = 8, .D = 8, .output_perm_wrong = true}, "not transposed back");
}

TEST(FuseAttention, DisabledItemStaysUnfused) {
  auto first = run_both({});
  ASSERT_EQ(first.fused.fusion.items.size(), 1u);
  FusionConfig off;
  off.disabled = {first.fused.fusion.items[0].name};
  auto second = test::expect_fused_matches_reference(attention_graph({}), inputs_for({}, Pad::Right, -10000.f, 7), off);
  EXPECT_EQ(attention_kernel(second.fused), "");
  for (const FusionItem& item : second.fused.fusion.items) EXPECT_NE(item.kind, "Attention");
}

}  // namespace
}  // namespace fusor
