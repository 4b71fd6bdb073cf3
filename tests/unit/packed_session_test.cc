// Packed (padding-free) execution on a hand-built BERT-style encoder: embeddings with HF BERT's
// position table Slice, a padding mask, one attention block, LayerNorm and an FFN. Each request
// of a packed run must match the same request run alone in an ordinary session (fast and
// reference), at lengths 1, 2, odd and the longest, left- and right-padded; graphs that break an
// assumption are refused with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "check/compare.h"
#include "fusor/packed.h"
#include "graph_builder.h"
#include "kernels/cpu/onednn_context.h"
#include "onnx/exporter.h"
#include "passes/pack_tokens.h"

namespace fusor {
namespace {

constexpr int64_t kHidden = 16, kHeads = 2, kVocab = 50, kMaxPositions = 64;

Tensor ints(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}
Tensor scalar(float x) {
  Tensor t(DType::Float32, {});
  *t.data<float>() = x;
  return t;
}
Tensor random(Dims dims, uint32_t seed, float scale = 0.5f) {
  Tensor t(DType::Float32, std::move(dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

enum class Variant { Encoder, MixesTokens, PerQueryMask, ImageInput, RangePositions };

std::string encoder(Variant variant = Variant::Encoder) {
  test::GraphBuilder b(17);
  const Shape tokens = {Dim{-1, "batch"}, Dim{-1, "sequence"}};
  if (variant == Variant::ImageInput) {
    int x = b.input("pixels", DType::Float32, Shape{Dim{-1, "batch"}, Dim{3, ""}});
    return export_onnx_bytes(*b.finish({b.node(Op::Relu, {x}, "y")}));
  }
  int ids = b.input("input_ids", DType::Int64, tokens), mask = b.input("attention_mask", DType::Int64, tokens);
  // Embeddings: word + position (HF BERT cuts an arange buffer to the sequence length).
  Tensor arange(DType::Int64, {1, kMaxPositions});
  for (int64_t i = 0; i < kMaxPositions; ++i) arange.data<int64_t>()[i] = i;
  int shape = b.node(Op::Shape, {ids}, "ids_shape", DType::Int64);
  int len = b.node(Op::Gather, {shape, b.constant("one", ints({1}))}, "seq_len", DType::Int64);
  int pos = b.node(Op::Slice, {b.constant("position_ids", arange), b.constant("zero", ints({0})), len,
                               b.constant("axis1", ints({1}))},
                   "positions", DType::Int64);
  if (variant == Variant::RangePositions) {  // Range(0, Shape(ids)[1]): packed, it would not restart per request
    Tensor zero(DType::Int64, {}), one(DType::Int64, {});
    *zero.data<int64_t>() = 0, *one.data<int64_t>() = 1;
    int n = b.node(Op::Gather, {shape, b.constant("one_scalar", one)}, "seq_len_scalar", DType::Int64);
    pos = b.node(Op::Range, {b.constant("zero_scalar", zero), n, b.constant("step", one)}, "range_positions", DType::Int64);
  }
  int words = b.node(Op::Gather, {b.constant("word_table", random({kVocab, kHidden}, 1)), ids}, "words");
  int where = b.node(Op::Gather, {b.constant("pos_table", random({kMaxPositions, kHidden}, 2)), pos}, "pos_emb");
  int x = b.node(Op::Add, {words, where}, "emb");
  // Additive padding mask [B,1,1,S] (or, for the near miss, [B,1,S,S]).
  int m = b.node(Op::Unsqueeze, {mask, b.constant("mask_axes", ints({1, 2}))}, "mask4", DType::Int64);
  m = b.node(Op::Cast, {m}, "maskf", DType::Float32, {{"to", DType::Float32}});
  m = b.node(Op::Mul, {b.node(Op::Sub, {b.constant("one_f", scalar(1.f)), m}, "inv"), b.constant("big", scalar(-10000.f))},
             "bias");
  if (variant == Variant::PerQueryMask) {
    int t = b.node(Op::Transpose, {m}, "bias_t", DType::Float32, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
    m = b.node(Op::Add, {m, t}, "bias_qk");
  }
  // Attention.
  const int64_t d = kHidden / kHeads;
  auto proj = [&](const std::string& n, uint32_t seed) {
    return b.node(Op::MatMul, {x, b.constant(n + "_w", random({kHidden, kHidden}, seed, 0.3f))}, n);
  };
  int split = b.constant("split", ints({0, 0, kHeads, d}));
  auto heads = [&](int v, const std::string& n, std::vector<int64_t> perm) {
    return b.node(Op::Transpose, {b.node(Op::Reshape, {v, split}, n + "_heads")}, n + "_t", DType::Float32, {{"perm", perm}});
  };
  int q = heads(proj("q", 3), "q", {0, 2, 1, 3}), k = heads(proj("k", 4), "k", {0, 2, 3, 1});
  int v = heads(proj("v", 5), "v", {0, 2, 1, 3});
  int s = b.node(Op::Div, {b.node(Op::MatMul, {q, k}, "scores"), b.constant("sqrt_d", scalar(std::sqrt(float(d))))}, "scaled");
  s = b.node(Op::Softmax, {b.node(Op::Add, {s, m}, "masked")}, "probs", DType::Float32, {{"axis", int64_t{-1}}});
  int ctx = b.node(Op::Transpose, {b.node(Op::MatMul, {s, v}, "ctx_heads")}, "ctx_t", DType::Float32,
                   {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  ctx = b.node(Op::Reshape, {ctx, b.constant("merge", ints({0, 0, kHidden}))}, "ctx");
  // Residual, LayerNorm, FFN with GELU-free ReLU, residual.
  int h = b.node(Op::Add, {x, b.node(Op::MatMul, {ctx, b.constant("o_w", random({kHidden, kHidden}, 6, 0.3f))}, "attn_out")},
                 "res1");
  h = b.node(Op::LayerNormalization, {h, b.constant("ln_g", random({kHidden}, 7)), b.constant("ln_b", random({kHidden}, 8))},
             "ln1", DType::Float32, {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}});
  int f = b.node(Op::Relu, {b.node(Op::MatMul, {h, b.constant("f1", random({kHidden, 32}, 9, 0.3f))}, "ffn1")}, "act");
  int out = b.node(Op::Add, {h, b.node(Op::MatMul, {f, b.constant("f2", random({32, kHidden}, 10, 0.3f))}, "ffn2")}, "res2");
  if (variant == Variant::MixesTokens)  // a token-to-token product after attention
    out = b.node(Op::MatMul, {b.node(Op::Transpose, {out}, "out_t", DType::Float32, {{"perm", std::vector<int64_t>{0, 2, 1}}}),
                              out},
                 "gram");
  return export_onnx_bytes(*b.finish({out}));
}

using Feeds = std::map<std::string, Tensor>;

// One request: `rows` sequences of `len` tokens, `pad` of them masked on the left or right.
Feeds request(int64_t rows, int64_t len, int64_t pad, bool left, uint32_t seed) {
  Tensor ids(DType::Int64, {rows, len}), mask(DType::Int64, {rows, len});
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < rows * len; ++i) {
    const int64_t j = i % len;
    ids.data<int64_t>()[i] = static_cast<int64_t>(rng() % kVocab);
    mask.data<int64_t>()[i] = left ? j >= pad : j < len - pad;
  }
  return {{"input_ids", ids}, {"attention_mask", mask}};
}

Feeds alone(const Engine& engine, const Feeds& r, bool reference) {
  SessionOptions o;
  o.reference = reference;
  const Dims& d = r.at("input_ids").dims();
  return engine.session({{"input_ids", d}, {"attention_mask", d}}, o).run(r);
}

void expect_packed_matches_alone(bool reference) {
  Engine engine = Engine::load_bytes(encoder());
  SessionOptions o;
  o.reference = reference;
  PackedSession packed = packed_session(engine, 96, o);
  std::vector<Feeds> reqs = {request(1, 1, 0, false, 1),   request(1, 2, 1, true, 2),  request(2, 7, 3, false, 3),
                             request(1, 64, 0, false, 4), request(1, 13, 5, true, 5)};
  int64_t tokens = 0;
  for (const Feeds& r : reqs) tokens += packed.tokens_of(r);
  ASSERT_EQ(tokens, 1 + 2 + 14 + 64 + 13);
  auto outs = packed.run(reqs);
  ASSERT_EQ(outs.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    Tensor want = alone(engine, reqs[i], reference).at("res2");
    const Tensor& got = outs[i].at("res2");
    ASSERT_EQ(got.dims(), want.dims()) << "request " << i;
    Difference d = compare_tensors(got, want, twin_tolerance());
    EXPECT_TRUE(d.within) << "request " << i << ": max |a-b| " << d.max_abs << " at " << d.worst_index;
  }
  // A second run with other requests reuses the plan; nothing of the first run leaks in.
  auto again = packed.run(std::vector<Feeds>{reqs[3]});
  EXPECT_TRUE(compare_tensors(again[0].at("res2"), outs[3].at("res2"), twin_tolerance()).within);
}

TEST(PackedSession, EachRequestMatchesRunningItAloneFast) { expect_packed_matches_alone(false); }
TEST(PackedSession, EachRequestMatchesRunningItAloneReference) { expect_packed_matches_alone(true); }

TEST(PackedSession, RunsAttentionAsOnePackedKernel) {
  Engine engine = Engine::load_bytes(encoder());
  PackedSession packed = packed_session(engine, 32);
  bool packed_attention = false;
  packed.session().set_observer([&](const StepEvent& e) {
    packed_attention |= std::string(e.kernel).find("_packed") != std::string::npos;
  });
  packed.run(std::vector<Feeds>{request(1, 5, 0, false, 1)});
  EXPECT_TRUE(packed_attention);
  EXPECT_EQ(packed.capacity(), 32);
}

// Rows past the requests' tokens are filler: the panel GEMMs store zeros there instead of
// computing them, during a packed run only. Run directly, the same session computes every row.
// Whether oneDNN's f32 matmul on this CPU is its jit sgemm (no AVX-512), where the panel GEMM
// takes the GEMMs of two rows and more; with AVX-512 it is brgemm, also in a build for AVX2.
bool onednn_matmul_is_sgemm() {
  using dnnl::memory;
  const memory::desc src({32, 64}, memory::data_type::f32, memory::format_tag::ab),
      w({64, 64}, memory::data_type::f32, memory::format_tag::any),
      dst({32, 64}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w, dst), cpu::onednn::engine());
  return std::string(pd.impl_info_str()).rfind("gemm:", 0) == 0;
}

TEST(PackedSession, PanelGemmsSkipTheFillerRowsOfAPackedRunOnly) {
  if (!onednn_matmul_is_sgemm()) GTEST_SKIP() << "AVX-512: the GEMMs run on oneDNN's brgemm, not the panel GEMM";
  Engine engine = Engine::load_bytes(encoder());
  PackedSession packed = packed_session(engine, 32);
  int64_t gemms = 0, filler_zero = 0, filler_nonzero = 0;
  packed.session().set_observer([&](const StepEvent& e) {
    if (std::string(e.kernel).find("_panel") == std::string::npos) return;
    ++gemms;
    const Tensor& y = e.outputs[0];
    const int64_t n = y.dims().back();
    for (int64_t i = 7 * n; i < y.numel(); ++i) (y.data<float>()[i] == 0.f ? filler_zero : filler_nonzero)++;
  });
  Feeds r = request(1, 7, 0, false, 1);
  const Tensor first = packed.run(std::vector<Feeds>{r})[0].at("res2");
  ASSERT_GT(gemms, 0) << "no step ran on the panel GEMM";
  EXPECT_EQ(filler_nonzero, 0);
  EXPECT_GT(filler_zero, 0);
  // Directly: the filler ids (0) give the GEMMs nonzero rows past the request.
  filler_zero = filler_nonzero = 0;
  Feeds whole;
  for (const char* name : {"input_ids", "attention_mask", kPackedSequenceStarts, kPackedPositions})
    whole[name] = Tensor(DType::Int64, {1, 32});
  for (int64_t i = 0; i < 32; ++i) {  // the request, then one-token filler sequences
    whole["input_ids"].data<int64_t>()[i] = i < 7 ? r.at("input_ids").data<int64_t>()[i] : 0;
    whole["attention_mask"].data<int64_t>()[i] = 1;
    whole[kPackedSequenceStarts].data<int64_t>()[i] = i < 7 ? 0 : i;
    whole[kPackedPositions].data<int64_t>()[i] = i < 7 ? i : 0;
  }
  packed.session().run(whole);
  EXPECT_GT(filler_nonzero, filler_zero);
  // And a packed run after that skips the filler again, with the same output.
  filler_zero = filler_nonzero = 0;
  EXPECT_TRUE(compare_tensors(packed.run(std::vector<Feeds>{r})[0].at("res2"), first, Tolerance{0, 0, 0}).within);
  EXPECT_EQ(filler_nonzero, 0);
}

std::string refusal(Variant v) {
  try {
    packed_session(Engine::load_bytes(encoder(v)), 24);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::UnsupportedOp) << e.what();
    return e.what();
  }
  return "";
}

TEST(PackedSession, RefusesGraphsThatMixTokensWithTheReason) {
  EXPECT_NE(refusal(Variant::MixesTokens).find("Transpose_out_t"), std::string::npos) << refusal(Variant::MixesTokens);
  EXPECT_NE(refusal(Variant::PerQueryMask).find("not one value per key"), std::string::npos)
      << refusal(Variant::PerQueryMask);
  EXPECT_NE(refusal(Variant::ImageInput).find("is not a [batch, sequence] tensor"), std::string::npos)
      << refusal(Variant::ImageInput);
  EXPECT_NE(refusal(Variant::RangePositions).find("reads 'pos_emb', which is computed from the sequence length"),
            std::string::npos)
      << refusal(Variant::RangePositions);
}

TEST(PackedSession, PositionsFromTheLengthStillMatchAloneUnpacked) {
  // The refused variant is a valid model: each request alone gives positions 0..len-1.
  Engine engine = Engine::load_bytes(encoder(Variant::RangePositions));
  Feeds r = request(1, 5, 0, false, 7);
  EXPECT_EQ(alone(engine, r, false).at("res2").dims(), (Dims{1, 5, kHidden}));
}

TEST(PackedSession, RejectsMalformedAndOversizedRequests) {
  PackedSession packed = packed_session(Engine::load_bytes(encoder()), 16);
  auto kind_of = [&](std::vector<Feeds> reqs) {
    try {
      packed.run(reqs);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Runtime;
  };
  EXPECT_EQ(kind_of({request(1, 10, 0, false, 1), request(1, 7, 0, false, 2)}), ErrorKind::InvalidArgument);
  Feeds no_mask = request(1, 4, 0, false, 1);
  no_mask.erase("attention_mask");
  EXPECT_EQ(kind_of({no_mask}), ErrorKind::InvalidArgument);
  Feeds ragged = request(1, 4, 0, false, 1);
  ragged["attention_mask"] = request(1, 5, 0, false, 1).at("attention_mask");
  EXPECT_EQ(kind_of({ragged}), ErrorKind::InvalidArgument);
  EXPECT_THROW(packed_session(Engine::load_bytes(encoder()), 0), Error);
}

}  // namespace
}  // namespace fusor
