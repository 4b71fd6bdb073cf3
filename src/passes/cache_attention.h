// The decoder's KV cache in a paged pool (issue #16). An exported decoder step takes the past
// keys and values as inputs, concatenates this step's onto them, attends over the result and
// returns it as `present`, so every shape after the Concat depends on the past length and each
// step would need its own plan. prepare_cached_decoder rewrites each layer's
//   Concat(past, new) -> [head repeat] -> Q K^T -> scale, causal masks -> Softmax -> P V
// into one CachedAttention node (fusor domain) that appends the new keys and values to pool
// blocks and attends over its sequence's blocks in place. The rewritten graph has no past in any
// shape: it takes T tokens (of one or several sequences, each with its position and its
// sequence's block table), so one plan per token count serves every past length.
//
// What it proves before rewriting, refusing with an UnsupportedOp Error ("cannot cache attention:
// <why>") otherwise; a graph with DynamicQuantizeLinear (one scale over the whole step) is refused
// outright. A one-input Concat (transformers 5 exports Concat([past])) is an Identity
// first. The original graph is bound at two (tokens, past) probes with an all-ones
// attention_mask, and at each probe:
//  - present key and value are Concat(past, new) along the sequence axis;
//  - the path from each present to its product (head repeat, key transpose, and on the keys a
//    positive constant factor, which torch's SDPA export applies as sqrt(scale) and which joins
//    the node's scale) is evaluated on a tensor of distinct values and must give exactly "query
//    head h reads KV head h / (H / KVH)";
//  - the ops between Q K^T and the Softmax are evaluated on known scores and must give
//    scale * score where key j <= query i + past (and j > i + past - window, with a window), and
//    at most -1e4 (nothing, after the softmax) elsewhere: a causal mask, with any padding mask a
//    no-op when every token is real;
//  - the nodes between the Softmax and P V (Casts, a guard that zeroes rows seeing no key) give
//    the probabilities unchanged;
//  - after the rewrite nothing reads the past, the present or the attention mask, except through
//    values that held each token's position (which read position_ids instead) or the same small
//    integers at every probe (a head size read off the present's shape, which become constants).
// A third probe, 2 tokens after a past near the context length (or the longest of 4094, 2046, ...
// that binds), checks the mask again: a sliding window hides keys only that far behind. The
// widest window a probe shows becomes the node's `window` attribute, and every probe's mask must
// be exactly that window's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace fusor {

// The fusion item's name: a fusion switch (fusion.kv_cache) and the gate's item.
inline constexpr const char* kCacheAttentionItem = "kv_cache";
inline constexpr const char* kBlockTable = "fusor.kv.block_table";

// The decoder export's names, per layer for the cache.
struct DecoderGraphNames {
  std::string input_ids, attention_mask, position_ids;
  std::vector<std::string> past_keys, past_values, present_keys, present_values;
  int64_t head_dim = 0;  // the configs' head size, for past inputs that name theirs (0: none given)
};

// What the rewritten graph takes besides input_ids and position_ids (both [1, T]).
struct CachedDecoder {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  // Per layer: the pool inputs [blocks, kv_heads, block size, head_dim], float32.
  std::vector<std::string> key_caches, value_caches;
  std::string block_table = kBlockTable;  // int64 [1, T, blocks per sequence]
};

// Rewrites `g` (an imported decoder step). Throws UnsupportedOp with the reason.
// `context_length` (0: unknown) places the far probe.
CachedDecoder prepare_cached_decoder(Graph& g, const DecoderGraphNames& names, EvaluateFn evaluate,
                                     int64_t context_length = 0);

}  // namespace fusor
