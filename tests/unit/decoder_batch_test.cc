// The paged-KV-cache decode runtime on the real LLaMA-style export (models/llama-tiny, made by
// scripts/get-models): the cache_attention rewrite and its refusals, several sequences at
// different positions in one step against each alone in the plain loop, the pool's accounting,
// and a steady-state decode step that allocates nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <filesystem>
#include <thread>

#include "allocation_counter.h"
#include "engine/internals.h"
#include "fusor/decoder.h"
#include "fusor/error.h"
#include "generate/name_template.h"
#include "ir/bind.h"
#include "kernels/cpu/openmp_wait.h"
#include "kernels/ref/reference.h"
#include "llama_tiny.h"
#include "passes/cache_attention.h"
#include "passes/logit_rows.h"

namespace fusor {
namespace {

const Engine& engine() { return test::llama_tiny_engine(); }
const DecoderSpec& spec() { return test::llama_tiny_spec(); }

DecoderGraphNames names() {
  DecoderGraphNames n{spec().input_ids, spec().attention_mask, spec().position_ids, {}, {}, {}, {}};
  for (int l = 0; l < spec().layers; ++l) {
    n.past_keys.push_back(format_name(spec().past_key, l));
    n.past_values.push_back(format_name(spec().past_value, l));
    n.present_keys.push_back(format_name(spec().present_key, l));
    n.present_values.push_back(format_name(spec().present_value, l));
  }
  return n;
}

std::string refusal(Graph g) {
  try {
    prepare_cached_decoder(g, names(), ref::evaluate);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::UnsupportedOp);
    return e.what();
  }
  return "";
}

Node& node_named(Graph& g, Op op, const std::string& part) {
  for (Node& n : g.nodes)
    if (n.op == op && n.name.find(part) != std::string::npos) return n;
  throw std::runtime_error("no " + part);
}

TEST(CacheAttentionPass, RewritesEveryLayerAndDropsThePast) {
  Graph g = graph_of(engine());
  const CachedDecoder c = prepare_cached_decoder(g, names(), ref::evaluate);
  EXPECT_EQ(c.heads, 8);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(c.head_dim, 64);
  int cached = 0;
  for (const Node& n : g.nodes)
    if (n.op == Op::CachedAttention) {
      ++cached;
      EXPECT_FLOAT_EQ(n.attr_float("scale", 0), 0.125f);
      EXPECT_EQ(n.attr_int("kv_heads", 0), 2);
    } else {
      EXPECT_NE(n.op, Op::Softmax) << n.name;  // every attention went into the cache op
    }
  EXPECT_EQ(cached, 4);
  std::vector<std::string> inputs, outputs;
  for (int id : g.inputs) inputs.push_back(g.values[static_cast<size_t>(id)].name);
  for (int id : g.outputs) outputs.push_back(g.values[static_cast<size_t>(id)].name);
  EXPECT_EQ(outputs, std::vector<std::string>{"logits"});
  EXPECT_EQ(inputs.size(), 3u + 8u);  // ids, positions, block table, and a key and value pool per layer
  for (const char* gone : {"attention_mask", "past_key_values.0.key"})
    EXPECT_EQ(std::count(inputs.begin(), inputs.end(), gone), 0) << gone;
}

// The cached decoder bound at `tokens` tokens, with a small pool and, once the pass has added it,
// `rows` logit rows: gather_logit_rows' probes, and what the tests read its result from.
TokenProbe probe(const Graph& g, const CachedDecoder& c, int64_t tokens, int64_t rows = 0) {
  std::vector<TensorType> types;
  for (int id : g.inputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    Dims dims = {4, c.kv_heads, 16, c.head_dim};  // a value pool
    if (std::count(c.key_caches.begin(), c.key_caches.end(), v.name)) dims = {4, c.kv_heads, c.head_dim, 16};
    else if (v.name == spec().input_ids || v.name == spec().position_ids) dims = {1, tokens};
    else if (v.name == c.block_table) dims = {1, tokens, 4};
    else if (v.name == kLogitRows) dims = {rows};
    types.push_back({v.dtype, dims});
  }
  return {tokens, bind_graph(g, types, std::vector<Tensor>(types.size()), ref::evaluate).types};
}

// The MatMuls that run on 2 gathered rows of a 5-token step, by name.
std::vector<std::string> matmuls_on_rows(const Graph& g, const CachedDecoder& c) {
  const TokenProbe bound = probe(g, c, 5, 2);
  std::vector<std::string> names;
  for (const Node& n : g.nodes)
    if (n.op == Op::MatMul) {
      const Dims& out = bound.types[static_cast<size_t>(n.outputs[0])].dims;
      if (out.size() == 3 && out[1] == 2) names.push_back(n.name);
    }
  std::sort(names.begin(), names.end());
  return names;
}

// Everything from the last attention up runs on the gathered rows: the last layer's output
// projection, residual adds, MLP and final norm, and the LM head. Two Gathers feed them (the
// attention's output and the residual into the last layer). Earlier layers, and the last layer's
// Q, K and V projections (the cache needs every token's keys and values), keep every row.
TEST(LogitRowsPass, RunsTheLastLayersRowWiseTailOnTheGatheredRows) {
  Graph g = graph_of(engine());
  const CachedDecoder c = prepare_cached_decoder(g, names(), ref::evaluate);
  const TokenProbe probes[2] = {probe(g, c, 3), probe(g, c, 5)};
  ASSERT_TRUE(gather_logit_rows(g, "logits", probes));
  int gathers = 0;
  for (const Node& n : g.nodes) gathers += n.op == Op::Gather && n.name.starts_with(kLogitRows);
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(matmuls_on_rows(g, c),
            (std::vector<std::string>{"/lm/lm_head/MatMul", "/lm/model/layers.3/mlp/down_proj/MatMul",
                                      "/lm/model/layers.3/mlp/gate_proj/MatMul", "/lm/model/layers.3/mlp/up_proj/MatMul",
                                      "/lm/model/layers.3/self_attn/o_proj/MatMul"}));
  const TokenProbe again[2] = {probe(g, c, 3, 3), probe(g, c, 5, 5)};
  EXPECT_FALSE(gather_logit_rows(g, "logits", again)) << "a second time: the rows input exists";
}

// The tail stops below a value that something else reads too (here a second graph output), and
// a head that is not a MatMul by a constant leaves the graph as it was.
TEST(LogitRowsPass, StopsAtAValueReadOutsideTheTailOrLeavesTheGraph) {
  Graph g = graph_of(engine());
  const CachedDecoder c = prepare_cached_decoder(g, names(), ref::evaluate);
  g.outputs.push_back(g.find_value("/lm/model/layers.3/mlp/down_proj/MatMul_output_0"));
  const TokenProbe probes[2] = {probe(g, c, 3), probe(g, c, 5)};
  ASSERT_TRUE(gather_logit_rows(g, "logits", probes));
  EXPECT_EQ(matmuls_on_rows(g, c), std::vector<std::string>{"/lm/lm_head/MatMul"});

  Graph other = graph_of(engine());
  const CachedDecoder oc = prepare_cached_decoder(other, names(), ref::evaluate);
  const TokenProbe other_probes[2] = {probe(other, oc, 3), probe(other, oc, 5)};
  for (Node& n : other.nodes)
    if (n.op == Op::MatMul && n.name.find("lm_head") != std::string::npos) n.op = Op::Add;  // not a head any more
  const size_t nodes = other.nodes.size();
  EXPECT_FALSE(gather_logit_rows(other, "logits", other_probes));
  EXPECT_EQ(other.nodes.size(), nodes);
}

TEST(CacheAttentionPass, RefusesWhatItCannotProve) {
  Graph g = graph_of(engine());
  {  // present concatenated along another axis: the step itself no longer binds
    Graph h = g;
    Node& concat = h.nodes[static_cast<size_t>(h.values[static_cast<size_t>(h.find_value("present.1.key"))].producer)];
    concat.attrs["axis"] = int64_t{3};
    EXPECT_NE(refusal(h).find("does not bind"), std::string::npos) << refusal(h);
  }
  {  // the causal mask taken away: the scores skip the Add
    Graph h = g;
    Node& softmax = node_named(h, Op::Softmax, "layers.2/");
    const Node& add = h.nodes[static_cast<size_t>(h.values[static_cast<size_t>(softmax.inputs[0])].producer)];
    ASSERT_EQ(add.op, Op::Add);
    softmax.inputs[0] = add.inputs[0];
    EXPECT_NE(refusal(h).find("causally masked"), std::string::npos) << refusal(h);
  }
  {  // a softmax over the wrong axis
    Graph h = g;
    node_named(h, Op::Softmax, "layers.0/").attrs["axis"] = int64_t{2};
    EXPECT_NE(refusal(h).find("key axis"), std::string::npos) << refusal(h);
  }
}

// transformers 5 exports a one-input Concat([past]) before the real Concat(past, new): an identity.
TEST(CacheAttentionPass, SeesThroughAOneInputConcatOfThePast) {
  Graph g = graph_of(engine());
  for (int layer = 0; layer < spec().layers; ++layer)
    for (const std::string& present : {format_name(spec().present_key, layer), format_name(spec().present_value, layer)}) {
      Node& concat = g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(g.find_value(present))].producer)];
      Value copy = g.values[static_cast<size_t>(concat.inputs[0])];
      copy.name += ".alone";
      copy.producer = -1;
      const int alone = g.add_value(std::move(copy));
      Node identity = concat;
      identity.name += "/alone";
      identity.inputs = {concat.inputs[0]};
      identity.outputs = {alone};
      concat.inputs[0] = alone;
      g.nodes.push_back(std::move(identity));
      g.values[static_cast<size_t>(alone)].producer = static_cast<int>(g.nodes.size()) - 1;
    }
  g.reorder_nodes();
  const CachedDecoder c = prepare_cached_decoder(g, names(), ref::evaluate);
  EXPECT_EQ(c.key_caches.size(), 4u);
  for (const Node& n : g.nodes) EXPECT_NE(n.op, Op::Softmax) << n.name;
}

// DynamicQuantizeLinear takes one scale over its whole input: a step's other sequences (and a
// plan's padding rows) would change each sequence's values.
TEST(CacheAttentionPass, RefusesAScaleOverTheWholeStep) {
  Graph g = graph_of(engine());
  Node& matmul = node_named(g, Op::MatMul, "layers.1/");
  const int x = matmul.inputs[0];
  auto fresh = [&](const std::string& name, DType dtype) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    return g.add_value(std::move(v));
  };
  const int q = fresh("q", DType::UInt8), scale = fresh("q.scale", DType::Float32), zero = fresh("q.zero", DType::UInt8),
            back = fresh("q.back", DType::Float32);
  Node quantize;
  quantize.op = Op::DynamicQuantizeLinear;
  quantize.op_type = "DynamicQuantizeLinear";
  quantize.name = "quantize";
  quantize.opset = 17;
  quantize.inputs = {x};
  quantize.outputs = {q, scale, zero};
  Node dequantize = quantize;
  dequantize.op = Op::DequantizeLinear;
  dequantize.op_type = "DequantizeLinear";
  dequantize.name = "dequantize";
  dequantize.inputs = {q, scale, zero};
  dequantize.outputs = {back};
  node_named(g, Op::MatMul, "layers.1/").inputs[0] = back;
  g.nodes.push_back(std::move(quantize));
  g.nodes.push_back(std::move(dequantize));
  for (size_t i = g.nodes.size() - 2; i < g.nodes.size(); ++i)
    for (int out : g.nodes[i].outputs) g.values[static_cast<size_t>(out)].producer = static_cast<int>(i);
  g.reorder_nodes();
  EXPECT_NE(refusal(g).find("takes one scale over all of a step's tokens"), std::string::npos) << refusal(g);
}

std::vector<TokenId> ids(int n, int seed) { return test::prompt_ids(n, seed); }

double max_diff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

// Three sequences joining at steps 0, 1 and 3, fed the same teacher-forced tokens as three
// one-sequence plain loops (unfused): the logits agree at every step.
TEST(DecoderBatch, SequencesAtDifferentPositionsMatchEachAlone) {
  SessionOptions unfused;
  unfused.fusion.reset();
  DecoderBatch batch(engine(), spec());
  const std::vector<std::vector<TokenId>> prompts = {ids(1, 1), ids(17, 2), ids(40, 3)};
  const int joins[3] = {0, 1, 3};
  std::vector<DecoderStep> alone;
  std::vector<DecoderBatch::SequenceId> seq;
  for (int i = 0; i < 3; ++i) {
    alone.emplace_back(engine(), spec(), unfused);
    ASSERT_FALSE(alone.back().stats().kv_cache);
    seq.push_back(batch.add());
  }
  for (int step = 0; step < 7; ++step) {
    std::vector<DecoderBatch::Feed> feeds;
    std::vector<std::vector<TokenId>> fed;
    std::vector<int> who;
    for (int i = 0; i < 3; ++i) {
      if (step < joins[i]) continue;
      fed.push_back(step == joins[i] ? prompts[static_cast<size_t>(i)] : ids(1, 100 * i + step));
      who.push_back(i);
    }
    for (size_t k = 0; k < fed.size(); ++k) feeds.push_back({seq[static_cast<size_t>(who[k])], fed[k]});
    const auto got = batch.step(feeds);
    ASSERT_EQ(got.size(), feeds.size());
    for (size_t k = 0; k < fed.size(); ++k) {
      const std::span<const float> want = alone[static_cast<size_t>(who[k])].run(fed[k]);
      EXPECT_LT(max_diff(got[k], want), 2e-4) << "sequence " << who[k] << " step " << step;
      EXPECT_EQ(batch.length(seq[static_cast<size_t>(who[k])]), alone[static_cast<size_t>(who[k])].past_length());
    }
  }
}

// A prompt-sized chunk that ends at most 4 feeds runs on a plan whose tail has 4 logit rows, one
// that ends up to 16 on a plan of 16, more on the plan with a row per sequence: each matches each
// sequence alone. The first step builds the largest form (for the vocabulary) and its own.
TEST(DecoderBatch, FewAndManyLogitRowsOfAPromptSizedStepMatchEachAlone) {
  SessionOptions unfused;
  unfused.fusion.reset();
  DecoderBatch batch(engine(), spec());
  std::vector<DecoderStep> alone;
  std::vector<DecoderBatch::SequenceId> seq;
  for (int i = 0; i < 6; ++i) {
    alone.emplace_back(engine(), spec(), unfused);
    seq.push_back(batch.add());
  }
  auto check = [&](const std::vector<DecoderBatch::Feed>& feeds, const std::vector<int>& who) {
    const auto got = batch.step(feeds);
    ASSERT_EQ(got.size(), feeds.size());
    for (size_t k = 0; k < feeds.size(); ++k) {
      const std::span<const float> want = alone[static_cast<size_t>(who[k])].run(feeds[k].ids);
      EXPECT_LT(max_diff(got[k], want), 2e-4) << "sequence " << who[k];
    }
  };
  const std::vector<TokenId> prompt = ids(100, 7);
  check({{seq[0], prompt}}, {0});  // 100 tokens, one row read
  EXPECT_EQ(batch.plans_built(), 2u);
  std::vector<std::vector<TokenId>> fed = {ids(1, 8)};
  for (int i = 1; i < 6; ++i) fed.push_back(ids(20, 10 + i));
  std::vector<DecoderBatch::Feed> feeds;
  for (int i = 0; i < 6; ++i) feeds.push_back({seq[static_cast<size_t>(i)], fed[static_cast<size_t>(i)]});
  check(feeds, {0, 1, 2, 3, 4, 5});  // 101 tokens, six rows read: the same token count's 16-row plan
  EXPECT_EQ(batch.plans_built(), 3u);
}

// Steps run one at a time, so every plan runs in one arena: all of them built (up to 128 tokens)
// take the bytes of the largest, which a 128-token step alone builds.
TEST(DecoderBatch, EveryPlanRunsInOneArenaTheSizeOfTheLargest) {
  DecoderBatch all(engine(), spec());
  all.prepare(128);
  DecoderBatch one(engine(), spec());
  one.step(std::vector<DecoderBatch::Feed>{{one.add(), ids(128, 3)}});
  EXPECT_GT(all.plans_built(), one.plans_built() + 10);
  EXPECT_GT(one.arena_bytes(), 0u);
  EXPECT_EQ(all.arena_bytes(), one.arena_bytes());
}

TEST(DecoderBatch, RefusesAStepOfMoreSequencesThanItsPlansHoldRowsFor) {
  DecoderBatchOptions o;
  o.max_sequences = 2;
  DecoderBatch batch(engine(), spec(), {}, o);
  const std::vector<TokenId> one = ids(1, 5);
  std::vector<DecoderBatch::Feed> feeds;
  for (int i = 0; i < 3; ++i) feeds.push_back({batch.add(), one});
  try {
    batch.step(feeds);
    FAIL() << "three sequences in one step with max_sequences 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
  }
  feeds.pop_back();
  EXPECT_EQ(batch.step(feeds).size(), 2u);
}

TEST(DecoderBatch, PoolHoldsExactlyTheKeysAndValuesAndFreesThem) {
  DecoderBatchOptions o;
  o.cache_tokens = 64;  // 4 blocks of 16
  DecoderBatch batch(engine(), spec(), {}, o);
  KvCacheStats c = batch.cache();
  EXPECT_EQ(c.bytes_per_token, static_cast<size_t>(spec().layers * 2 * spec().kv_heads * spec().head_dim * 4));
  EXPECT_EQ(c.bytes, c.bytes_per_token * 64);
  EXPECT_EQ(c.blocks, 4);
  const auto a = batch.add(), b = batch.add();
  const std::vector<TokenId> p33 = ids(33, 5), p20 = ids(20, 6);
  const DecoderBatch::Feed first{a, p33};
  batch.step({&first, 1});
  EXPECT_EQ(batch.cache().blocks_used, 3);
  // b needs two more blocks, one is free: refused, nothing changes, and a still decodes.
  const DecoderBatch::Feed second{b, p20};
  try {
    batch.step({&second, 1});
    ADD_FAILURE() << "a full pool was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV cache is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(batch.length(b), 0);
  EXPECT_EQ(batch.cache().blocks_used, 3);
  batch.remove(a);
  EXPECT_EQ(batch.cache().blocks_used, 0);
  batch.step({&second, 1});
  EXPECT_EQ(batch.length(b), 20);
  const std::vector<TokenId> bad = {static_cast<TokenId>(spec().vocab_size)};
  const DecoderBatch::Feed out_of_vocab{b, bad};
  EXPECT_THROW(batch.step({&out_of_vocab, 1}), Error);
  const DecoderBatch::Feed twice[2] = {{b, p20}, {b, p20}};
  EXPECT_THROW(batch.step(twice), Error);
  EXPECT_EQ(batch.length(b), 20);
}

// A step stopped by its abandon flag commits nothing: before it runs, no block stays taken and no
// length moves; part way through, the cache rows it wrote past the sequence's length are written
// again before anything reads them, so the steps after it give the logits of a batch that never
// stopped.
TEST(DecoderBatch, AnAbandonedStepChangesNothingThatLaterStepsSee) {
  DecoderBatchOptions o;
  o.max_step_tokens = 16;  // a 160-token prompt runs as ten plans: room to stop between them
  const std::vector<TokenId> prompt = ids(160, 9), start(prompt.begin(), prompt.begin() + 20);
  DecoderBatch batch(engine(), spec(), {}, o), clean(engine(), spec(), {}, o);
  const auto a = batch.add(), c = clean.add();
  std::atomic<bool> stop{true};
  const DecoderBatch::Feed whole{a, prompt};
  EXPECT_TRUE(batch.step({&whole, 1}, &stop).empty());
  EXPECT_EQ(batch.length(a), 0);
  EXPECT_EQ(batch.cache().blocks_used, 0);
  ASSERT_TRUE(test::step_stopped_midway(batch, whole)) << "no attempt stopped the step while it ran";
  EXPECT_EQ(batch.length(a), 0);
  EXPECT_EQ(batch.cache().blocks_used, 0);
  // A shorter feed than the stopped one, then decodes over the positions it had written.
  std::vector<std::vector<TokenId>> feeds = {start};
  for (int i = 0; i < 6; ++i) feeds.push_back(ids(1, 300 + i));
  for (const auto& f : feeds) {
    const DecoderBatch::Feed fa{a, f}, fc{c, f};
    const auto got = batch.step({&fa, 1});
    const auto want = clean.step({&fc, 1});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(max_diff(got[0], want[0]), 0.0) << "at length " << batch.length(a);
  }
  EXPECT_EQ(batch.length(a), 26);
}

TEST(DecoderBatch, SteadyStateDecodeStepAllocatesNothing) {
  if (!test::counting_available()) GTEST_SKIP() << "allocation counting needs the plain allocator";
  DecoderBatch batch(engine(), spec());
  std::vector<DecoderBatch::Feed> feeds;
  std::vector<std::vector<TokenId>> prompts, next;
  for (int i = 0; i < 8; ++i) {
    prompts.push_back(ids(3 + 5 * i, i));
    next.push_back(ids(1, 50 + i));
  }
  for (int i = 0; i < 8; ++i) feeds.push_back({batch.add(), prompts[static_cast<size_t>(i)]});
  batch.step(feeds);
  for (int i = 0; i < 8; ++i) feeds[static_cast<size_t>(i)].ids = next[static_cast<size_t>(i)];
  batch.step(feeds);  // plans and buffers for 8 tokens exist from here
  // A step after a whole contention window votes on the OpenMP wait mode (openmp_wait.h): that
  // path allocates nothing either.
  std::this_thread::sleep_for(cpu::kContentionWindow);
  test::start_counting_allocations();
  for (int s = 0; s < 4; ++s) batch.step(feeds);  // positions stay within the blocks reserved so far
  const test::AllocationCount n = test::stop_counting_allocations();
  EXPECT_EQ(n.fusor, 0);
  RecordProperty("onednn_internal_allocations_per_step", static_cast<int>(n.onednn / 4));
}

}  // namespace
}  // namespace fusor
