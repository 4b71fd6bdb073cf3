// CachedAttention (issue #16): the reference kernel against attention computed here from plain
// contiguous K/V histories, the fast CPU kernel against the reference (outputs, and the caches
// both write in place), and the bad steps that must throw before writing anything.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "fusor/error.h"
#include "graph_builder.h"
#include "ir/bind.h"
#include "ir/graph.h"
#include "ir/op_table.h"
#include "kernels/cpu/backend.h"
#include "kernels/ref/reference.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "onnx/op_support.h"

namespace fusor {
namespace {

// One sequence in a step: `past` positions already in the cache, `fresh` new tokens after them.
struct Seq {
  int64_t past, fresh;
};

struct Config {
  int64_t H, KVH, D, BS;
  std::vector<Seq> seqs;
  int64_t padding = 0;  // padding tokens (position -1) mixed into the step
  int64_t window = 0;   // a sliding window (attribute `window`): each token sees its last positions
  float softcap = 0;    // attribute `softcap`: a scaled score s becomes softcap * tanh(s / softcap)
};

std::string describe(const Config& c) {
  return "H=" + std::to_string(c.H) + " KVH=" + std::to_string(c.KVH) + " D=" + std::to_string(c.D) +
         " BS=" + std::to_string(c.BS) + (c.window ? " window=" + std::to_string(c.window) : "") +
         (c.softcap > 0 ? " softcap=" + std::to_string(c.softcap) : "");
}

void PrintTo(const Config& c, std::ostream* os) { *os << describe(c); }

// A step as a runtime would set it up: a pool whose blocks the sequences hold in shuffled,
// non-contiguous order, their past positions filled, every other row of the pool random too
// (nothing may read it), and the step's tokens in shuffled order. The histories keep each
// sequence's keys and values per kv head contiguously, new tokens included, for the naive check.
struct Step {
  Config c;
  Node node;
  int64_t T = 0, NB = 0, MB = 0;
  std::vector<Tensor> inputs;  // query, key, value, positions, block_table, key_cache, value_cache
  std::vector<int64_t> token_seq;  // per token: its sequence, or -1 for padding
  // [seq][g] -> (past + fresh) x D
  std::vector<std::vector<std::vector<float>>> hist_k, hist_v;

  float* cache(int i) const { return inputs[static_cast<size_t>(i)].data<float>(); }
};

// Writes position `pos`'s key and value (D floats each) into cache block `block`, kv head g: the
// key as column pos % BS of the block's [D, BS] keys, the value as row pos % BS of its [BS, D].
void store_kv(const Config& c, int64_t block, int64_t g, int64_t pos, const float* key, const float* value,
              Tensor& key_cache, Tensor& value_cache) {
  const int64_t base = (block * c.KVH + g) * c.BS * c.D;
  for (int64_t e = 0; e < c.D; ++e) key_cache.data<float>()[base + e * c.BS + pos % c.BS] = key[e];
  std::copy_n(value, c.D, value_cache.data<float>() + base + pos % c.BS * c.D);
}

Node cached_attention_node(int64_t H, int64_t KVH, float scale) {
  Node n;
  n.name = "layer0.cached_attention";
  n.op_type = "CachedAttention";
  n.domain = "fusor";
  n.op = Op::CachedAttention;
  n.attrs = {{"num_heads", H}, {"kv_heads", KVH}, {"scale", scale}};
  n.inputs = {0, 1, 2, 3, 4, 5, 6};
  n.outputs = {7};
  return n;
}

Step make_step(const Config& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  Step s;
  s.c = c;
  s.node = cached_attention_node(c.H, c.KVH, 1.f / std::sqrt(static_cast<float>(c.D)));
  if (c.window > 0) s.node.attrs["window"] = c.window;
  if (c.softcap > 0) s.node.attrs["softcap"] = c.softcap;
  const size_t n = c.seqs.size();
  std::vector<int64_t> need(n);
  for (size_t i = 0; i < n; ++i) {
    need[i] = (c.seqs[i].past + c.seqs[i].fresh + c.BS - 1) / c.BS;
    s.NB += need[i];
    s.MB = std::max(s.MB, need[i] + 1);  // a spare entry, left -1: only entries up to pos / BS are read
    s.T += c.seqs[i].fresh;
  }
  s.NB += 3;  // blocks no sequence holds
  s.T += c.padding;
  std::vector<int64_t> block_ids(static_cast<size_t>(s.NB));
  std::iota(block_ids.begin(), block_ids.end(), 0);
  std::shuffle(block_ids.begin(), block_ids.end(), rng);
  std::vector<std::vector<int64_t>> blocks(n);
  size_t next = 0;
  for (size_t i = 0; i < n; ++i)
    for (int64_t b = 0; b < need[i]; ++b) blocks[i].push_back(block_ids[next++]);

  Tensor key_cache(DType::Float32, {s.NB, c.KVH, c.D, c.BS}), value_cache(DType::Float32, {s.NB, c.KVH, c.BS, c.D});
  for (int64_t i = 0; i < key_cache.numel(); ++i) {
    key_cache.data<float>()[i] = normal(rng);
    value_cache.data<float>()[i] = normal(rng);
  }
  s.hist_k.assign(n, std::vector<std::vector<float>>(static_cast<size_t>(c.KVH)));
  s.hist_v = s.hist_k;
  for (size_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < c.KVH; ++g) {
      auto& hk = s.hist_k[i][static_cast<size_t>(g)];
      auto& hv = s.hist_v[i][static_cast<size_t>(g)];
      const int64_t len = c.seqs[i].past + c.seqs[i].fresh;
      hk.resize(static_cast<size_t>(len * c.D));
      hv.resize(hk.size());
      for (auto& x : hk) x = normal(rng);
      for (auto& x : hv) x = normal(rng);
      for (int64_t p = 0; p < c.seqs[i].past; ++p) {  // the pool holds the past positions already
        store_kv(c, blocks[i][static_cast<size_t>(p / c.BS)], g, p, &hk[static_cast<size_t>(p * c.D)],
                 &hv[static_cast<size_t>(p * c.D)], key_cache, value_cache);
      }
    }

  // Tokens (sequence, position), shuffled: causality within the step comes from positions only.
  std::vector<std::pair<int64_t, int64_t>> tokens;
  for (size_t i = 0; i < n; ++i)
    for (int64_t p = c.seqs[i].past; p < c.seqs[i].past + c.seqs[i].fresh; ++p)
      tokens.push_back({static_cast<int64_t>(i), p});
  for (int64_t i = 0; i < c.padding; ++i) tokens.push_back({-1, -1});
  std::shuffle(tokens.begin(), tokens.end(), rng);

  const int64_t T = s.T;
  Tensor q(DType::Float32, {1, c.H, T, c.D}), k(DType::Float32, {1, c.KVH, T, c.D}), v(DType::Float32, {1, c.KVH, T, c.D});
  Tensor positions(DType::Int64, {1, T}), table(DType::Int64, {1, T, s.MB});
  for (int64_t i = 0; i < q.numel(); ++i) q.data<float>()[i] = normal(rng);
  for (int64_t i = 0; i < k.numel(); ++i) {  // padding tokens' rows are noise; real tokens' come from the histories
    k.data<float>()[i] = normal(rng);
    v.data<float>()[i] = normal(rng);
  }
  std::fill_n(table.data<int64_t>(), table.numel(), -1);
  for (int64_t t = 0; t < T; ++t) {
    const auto [seq, pos] = tokens[static_cast<size_t>(t)];
    s.token_seq.push_back(seq);
    positions.data<int64_t>()[t] = pos;
    if (seq < 0) {
      table.data<int64_t>()[t * s.MB] = s.NB + 5;  // a padding token's table is never read
      continue;
    }
    const auto& own = blocks[static_cast<size_t>(seq)];
    std::copy(own.begin(), own.end(), table.data<int64_t>() + t * s.MB);
    for (int64_t g = 0; g < c.KVH; ++g) {
      const size_t from = static_cast<size_t>(pos * c.D);
      std::copy_n(s.hist_k[static_cast<size_t>(seq)][static_cast<size_t>(g)].begin() + static_cast<int64_t>(from), c.D,
                  k.data<float>() + (g * T + t) * c.D);
      std::copy_n(s.hist_v[static_cast<size_t>(seq)][static_cast<size_t>(g)].begin() + static_cast<int64_t>(from), c.D,
                  v.data<float>() + (g * T + t) * c.D);
    }
  }
  s.inputs = {q, k, v, positions, table, key_cache, value_cache};
  return s;
}

// A copy whose caches have their own storage (the other inputs are only read).
std::vector<Tensor> fresh_inputs(const Step& s) {
  std::vector<Tensor> in = s.inputs;
  in[5] = in[5].clone();
  in[6] = in[6].clone();
  return in;
}

std::vector<TensorType> types_of(const std::vector<Tensor>& in) {
  std::vector<TensorType> types;
  for (const Tensor& t : in) types.push_back({t.dtype(), t.dims()});
  return types;
}

Tensor output_for(const Node& node, const std::vector<Tensor>& in) {
  std::vector<const Tensor*> consts(in.size(), nullptr);
  const auto types = types_of(in);
  InferContext ctx{node, types, consts, ref::evaluate};
  const std::vector<TensorType> out = op_info(Op::CachedAttention).infer(ctx);
  EXPECT_EQ(out.size(), 1u);
  return Tensor(out[0].dtype, out[0].dims);
}

Tensor run_reference(const Step& s, std::vector<Tensor>& in) {
  Tensor out = output_for(s.node, in);
  std::vector<Tensor> outs = {out};
  ref::evaluate(s.node, in, outs);
  return out;
}

std::unique_ptr<Kernel> fast_kernel(const Step& s) {
  const auto types = types_of(s.inputs);
  std::vector<const Tensor*> consts(types.size(), nullptr);
  const std::vector<TensorType> out = {{DType::Float32, {1, s.c.H, s.T, s.c.D}}};
  return cpu::backend().select(KernelRequest{s.node, types, consts, out}).kernel;
}

Tensor run_fast(const Step& s, Kernel& kernel, std::vector<Tensor>& in) {
  Tensor out = output_for(s.node, in);
  std::vector<Tensor> outs = {out};
  Tensor scratch(DType::UInt8, {static_cast<int64_t>(kernel.scratch_bytes())});
  kernel.run(in, outs, std::span<std::byte>(static_cast<std::byte*>(scratch.raw()), scratch.nbytes()));
  return out;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dims(), b.dims());
  float m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float d = std::fabs(a.data<float>()[i] - b.data<float>()[i]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return m;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// softmax(scale q K^T) V over positions 0..pos of the token's own history, in double.
std::vector<double> naive_attention(const Step& s, int64_t t, int64_t h) {
  const Config& c = s.c;
  const int64_t pos = s.inputs[3].data<int64_t>()[t];
  const size_t seq = static_cast<size_t>(s.token_seq[static_cast<size_t>(t)]);
  const size_t g = static_cast<size_t>(h / (c.H / c.KVH));
  const float* q = s.inputs[0].data<float>() + (h * s.T + t) * c.D;
  const auto& hk = s.hist_k[seq][g];
  const auto& hv = s.hist_v[seq][g];
  const double scale = s.node.attr_float("scale", 0.f);
  const int64_t first = c.window > 0 ? std::max<int64_t>(0, pos - c.window + 1) : 0;
  std::vector<double> w(static_cast<size_t>(pos + 1), -INFINITY);
  for (int64_t p = first; p <= pos; ++p) {
    double dot = 0;
    for (int64_t e = 0; e < c.D; ++e) dot += static_cast<double>(q[e]) * hk[static_cast<size_t>(p * c.D + e)];
    w[static_cast<size_t>(p)] = c.softcap > 0 ? c.softcap * std::tanh(dot * scale / c.softcap) : dot * scale;
  }
  const double max = *std::max_element(w.begin(), w.end());
  double sum = 0;
  for (double& x : w) sum += x = std::exp(x - max);
  std::vector<double> out(static_cast<size_t>(c.D), 0.0);
  for (int64_t p = 0; p <= pos; ++p)
    for (int64_t e = 0; e < c.D; ++e)
      out[static_cast<size_t>(e)] += w[static_cast<size_t>(p)] / sum * hv[static_cast<size_t>(p * c.D + e)];
  return out;
}

// The brief's mix: a decode at position 37, a 5-token prefill from 0, a decode at 16 (the first
// row of a block), a decode past one 256-key tile (the fast kernel's online-softmax rescale), and
// padding tokens.
std::vector<Seq> mixed_step() { return {{37, 1}, {0, 5}, {16, 1}, {300, 1}}; }

const Config kConfigs[] = {
    {8, 2, 64, 16, mixed_step(), 2},
    {8, 2, 32, 4, mixed_step(), 2},
    {8, 2, 64, 8, mixed_step(), 2},       // a block of one AVX2 vector, half an AVX-512 one
    {8, 2, 64, 32, mixed_step(), 2},      // a block of several vectors
    {4, 4, 64, 4, mixed_step(), 1},
    {4, 4, 32, 16, mixed_step(), 3},
    {8, 1, 20, 16, mixed_step(), 1},     // head dim not whole vectors; a group of 8 heads
    {8, 2, 64, 16, {{0, 40}, {3, 7}}, 2},  // prefill: causal within the step
    {4, 2, 64, 16, {{511, 1}}, 0},          // one long decode
    // Sliding windows: within a block, across blocks and a 256-key tile, a prefill whose rows
    // start at different keys, a window of one, and one wider than every position.
    {8, 2, 64, 16, mixed_step(), 2, 5},
    {8, 2, 64, 16, mixed_step(), 2, 40},
    {8, 2, 64, 16, {{0, 40}, {3, 7}}, 2, 9},
    {4, 2, 64, 16, {{511, 1}, {290, 20}}, 0, 270},
    {8, 2, 32, 4, mixed_step(), 1, 1},
    {8, 1, 20, 16, mixed_step(), 1, 3},
    {8, 2, 64, 16, mixed_step(), 1, 1000},
    // Softcaps (Gemma 2): one that bends most scores, and one with a window.
    {8, 2, 64, 16, mixed_step(), 2, 0, 0.5f},
    {8, 2, 64, 16, {{0, 40}, {3, 7}}, 2, 9, 2.0f},
};

class CachedAttentionCase : public ::testing::TestWithParam<Config> {};

TEST_P(CachedAttentionCase, ReferenceMatchesNaiveAttentionAndAppendsToTheCache) {
  const Step s = make_step(GetParam(), 7);
  std::vector<Tensor> in = fresh_inputs(s);
  const Tensor out = run_reference(s, in);
  const Config& c = s.c;
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) {
      const float* got = out.data<float>() + (h * s.T + t) * c.D;
      if (s.token_seq[static_cast<size_t>(t)] < 0) {
        for (int64_t e = 0; e < c.D; ++e) ASSERT_EQ(got[e], 0.f) << "padding token " << t;
        continue;
      }
      const std::vector<double> want = naive_attention(s, t, h);
      for (int64_t e = 0; e < c.D; ++e)
        ASSERT_NEAR(got[e], want[static_cast<size_t>(e)], 1e-5) << describe(c) << " token " << t << " head " << h;
    }
  // The caches: the step's tokens written at their positions, every other row as it was.
  Tensor want_k = s.inputs[5].clone(), want_v = s.inputs[6].clone();
  const int64_t* table = s.inputs[4].data<int64_t>();
  for (int64_t t = 0; t < s.T; ++t) {
    const int64_t seq = s.token_seq[static_cast<size_t>(t)], pos = s.inputs[3].data<int64_t>()[t];
    if (seq < 0) continue;
    for (int64_t g = 0; g < c.KVH; ++g) {
      const size_t from = static_cast<size_t>(pos * c.D);
      store_kv(c, table[t * s.MB + pos / c.BS], g, pos, &s.hist_k[static_cast<size_t>(seq)][static_cast<size_t>(g)][from],
               &s.hist_v[static_cast<size_t>(seq)][static_cast<size_t>(g)][from], want_k, want_v);
    }
  }
  EXPECT_TRUE(same_bytes(in[5], want_k)) << describe(c);
  EXPECT_TRUE(same_bytes(in[6], want_v)) << describe(c);
}

TEST_P(CachedAttentionCase, FastKernelMatchesReference) {
  const Step s = make_step(GetParam(), 11);
  std::unique_ptr<Kernel> fast = fast_kernel(s);
  ASSERT_NE(fast, nullptr);
  EXPECT_NE(fast->name().find("cached_attention_f32_d" + std::to_string(s.c.D)), std::string::npos) << fast->name();
  std::vector<Tensor> ref_in = fresh_inputs(s), fast_in = fresh_inputs(s);
  const Tensor want = run_reference(s, ref_in);
  const Tensor got = run_fast(s, *fast, fast_in);
  EXPECT_LE(max_abs_diff(got, want), 1e-5f) << describe(s.c) << " " << fast->name();
  EXPECT_TRUE(same_bytes(fast_in[5], ref_in[5]));
  EXPECT_TRUE(same_bytes(fast_in[6], ref_in[6]));
  // A second run of the same step writes the same rows again and gives the same output.
  const Tensor again = run_fast(s, *fast, fast_in);
  EXPECT_TRUE(same_bytes(again, got));
  EXPECT_TRUE(same_bytes(fast_in[5], ref_in[5]));
}

INSTANTIATE_TEST_SUITE_P(Steps, CachedAttentionCase, ::testing::ValuesIn(kConfigs));

// Both kernels, on a bad step: a one-line fusor::Error and the caches as they were.
void expect_rejected(const Step& s, const std::string& words) {
  std::unique_ptr<Kernel> fast = fast_kernel(s);
  ASSERT_NE(fast, nullptr);
  for (bool use_fast : {false, true}) {
    std::vector<Tensor> in = fresh_inputs(s);
    try {
      use_fast ? run_fast(s, *fast, in) : run_reference(s, in);
      ADD_FAILURE() << (use_fast ? "fast" : "reference") << " kernel accepted a bad step";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(words), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_TRUE(same_bytes(in[5], s.inputs[5])) << (use_fast ? "fast" : "reference");
    EXPECT_TRUE(same_bytes(in[6], s.inputs[6])) << (use_fast ? "fast" : "reference");
  }
}

// The first token of sequence `seq` in the step.
int64_t token_of(const Step& s, int64_t seq) {
  return std::find(s.token_seq.begin(), s.token_seq.end(), seq) - s.token_seq.begin();
}

TEST(CachedAttention, BlockIdOutsideThePoolIsAnErrorBeforeAnyWrite) {
  for (int64_t bad : {int64_t{-1}, int64_t{0}}) {
    Step s = make_step({8, 2, 64, 16, mixed_step(), 1}, 3);
    const int64_t t = token_of(s, 0);  // position 37: reads table entries 0..2
    s.inputs[4] = s.inputs[4].clone();
    s.inputs[4].data<int64_t>()[t * s.MB + 1] = bad < 0 ? bad : s.NB;
    expect_rejected(s, "outside the pool");
  }
}

TEST(CachedAttention, PositionBeyondTheBlockTableIsAnErrorBeforeAnyWrite) {
  Step s = make_step({8, 2, 64, 16, mixed_step(), 1}, 3);
  const int64_t t = token_of(s, 2);  // a decode at position 16
  s.inputs[3] = s.inputs[3].clone();
  s.inputs[3].data<int64_t>()[t] = s.MB * 16;  // needs table entry MB
  expect_rejected(s, "needs block");
}

TEST(CachedAttention, ShapeFunctionRejectsMismatchedInputs) {
  const Step s = make_step({8, 2, 32, 4, {{2, 1}}, 0}, 5);
  auto infer = [&](const Node& node, std::vector<TensorType> types) {
    std::vector<const Tensor*> consts(types.size(), nullptr);
    return op_info(Op::CachedAttention).infer(InferContext{node, types, consts, ref::evaluate});
  };
  const std::vector<TensorType> good = types_of(s.inputs);
  const auto out = infer(s.node, good);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims, (Dims{1, 8, s.T, 32}));
  EXPECT_EQ(out[0].dtype, DType::Float32);

  auto rejects = [&](std::vector<TensorType> types, const Node& node, const char* why) {
    EXPECT_THROW(infer(node, std::move(types)), Error) << why;
  };
  rejects(good, cached_attention_node(8, 3, 1.f), "H % KVH != 0");
  rejects(good, cached_attention_node(4, 2, 1.f), "num_heads disagrees with the query");
  auto with = [&](size_t i, TensorType t) {
    auto types = good;
    types[i] = std::move(t);
    return types;
  };
  rejects(with(1, {DType::Float32, {1, 2, s.T, 16}}), s.node, "key's D differs");
  rejects(with(2, {DType::Float32, {1, 2, s.T + 1, 32}}), s.node, "value's T differs");
  rejects(with(3, {DType::Int32, {1, s.T}}), s.node, "positions not int64");
  rejects(with(4, {DType::Int64, {s.T, s.MB}}), s.node, "block table of rank 2");
  rejects(with(5, {DType::Float32, {s.NB, 2, 16, 4}}), s.node, "key cache's D differs");
  rejects(with(5, {DType::Float32, {s.NB, 2, 4, 32}}), s.node, "key cache not transposed");
  rejects(with(6, {DType::Float32, {s.NB, 2, 8, 32}}), s.node, "value cache's BS differs");
  rejects(with(5, {DType::Float16, {s.NB, 2, 32, 4}}), s.node, "float16 cache");
  auto six = good;
  six.pop_back();
  rejects(six, s.node, "six inputs");
}

// All inputs constant at plan time: binding must still leave the node to run, since running it
// writes the caches (the folded copy would be thrown away with its effect).
TEST(CachedAttention, BindingNeverFoldsIt) {
  EXPECT_TRUE(op_writes_inputs(Op::CachedAttention));
  EXPECT_FALSE(op_writes_inputs(Op::MatMul));
  const Step s = make_step({4, 4, 32, 4, {{2, 1}}, 0}, 9);
  test::GraphBuilder b;
  std::vector<int> ids;
  for (size_t i = 0; i < s.inputs.size(); ++i) ids.push_back(b.constant("in" + std::to_string(i), s.inputs[i]));
  const int out = b.node(Op::CachedAttention, ids, "out", DType::Float32,
                         {{"num_heads", int64_t{4}}, {"kv_heads", int64_t{4}}, {"scale", 0.5f}});
  auto g = b.finish({out});
  g->nodes[0].domain = "fusor";
  const Binding bound = bind_graph(*g, {}, {}, ref::evaluate);
  EXPECT_FALSE(bound.folded(g->nodes[0]));
  EXPECT_EQ(bound.types[static_cast<size_t>(out)].dims, (Dims{1, 4, 1, 32}));
}

// The op is fusor's own: a node of domain "fusor" on export, read back as the same op (not as a
// call of a fused node's function), and unknown in ONNX's domain.
TEST(CachedAttention, RoundTripsThroughOnnxInDomainFusor) {
  const Step s = make_step({8, 2, 32, 4, {{5, 2}}, 1}, 13);
  const char* names[] = {"query", "key", "value", "positions", "block_table", "key_cache", "value_cache"};
  test::GraphBuilder b;
  std::vector<int> ids;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    Shape shape;
    for (int64_t d : s.inputs[i].dims()) shape.push_back(Dim{d, ""});
    ids.push_back(b.input(names[i], s.inputs[i].dtype(), shape));
  }
  const int out = b.node(Op::CachedAttention, ids, "attn", DType::Float32, s.node.attrs);
  auto g = b.finish({out});
  g->nodes[0].domain = "fusor";
  g->nodes[0].opset = 1;

  const std::string bytes = export_onnx_bytes(*g);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  ASSERT_EQ(m.graph().node_size(), 1);
  EXPECT_EQ(m.graph().node(0).domain(), "fusor");
  EXPECT_EQ(m.graph().node(0).op_type(), "CachedAttention");
  EXPECT_EQ(m.functions_size(), 0);
  int fusor_imports = 0;
  for (const auto& o : m.opset_import()) fusor_imports += o.domain() == "fusor";
  EXPECT_EQ(fusor_imports, 1);

  const Graph back = import_onnx_bytes(bytes, "");
  ASSERT_EQ(back.nodes.size(), 1u);
  const Node& n = back.nodes[0];
  EXPECT_EQ(n.op, Op::CachedAttention);
  EXPECT_EQ(n.domain, "fusor");
  EXPECT_EQ(n.attr_int("num_heads", 0), 8);
  EXPECT_EQ(n.attr_int("kv_heads", 0), 2);
  EXPECT_EQ(n.attr_float("scale", 0.f), s.node.attr_float("scale", 1.f));
  // Read back, it runs as before: same output, same caches written.
  std::vector<Tensor> before = fresh_inputs(s), after = fresh_inputs(s);
  const Tensor want = run_reference(s, before);
  Tensor got = output_for(n, after);
  std::vector<Tensor> outs = {got};
  ref::evaluate(n, after, outs);
  EXPECT_TRUE(same_bytes(got, want));
  EXPECT_TRUE(same_bytes(after[5], before[5]));

  EXPECT_EQ(op_for_node("fusor", "CachedAttention"), Op::CachedAttention);
  EXPECT_EQ(op_for_node("", "CachedAttention"), std::nullopt);
  EXPECT_NE(unsupported_reason("", "CachedAttention"), "");
}

}  // namespace
}  // namespace fusor
