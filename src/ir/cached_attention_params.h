// CachedAttention (issue #16): attention of this step's tokens against a paged KV cache that the
// node appends to in place. Its sizes and the checks of its inputs live here, in one place for
// the shape function and both kernels.
//
// Inputs: 0 query [1, H, T, D], 1 key and 2 value [1, KVH, T, D] (this step's), 3 positions int64
// [1, T] (< 0: padding token), 4 block_table int64 [1, T, MB], 5 key_cache [NB, KVH, D, BS] and
// 6 value_cache [NB, KVH, BS, D], all float32 but the int64 ones. Position p of token t's sequence
// lives in cache block block_table[t][p / BS], at p % BS: column p % BS of the block's keys, row
// p % BS of its values. Keys are stored transposed so that a query's scores against a block are
// vector FMAs over its D rows, with no transpose per step. A run first writes every token's key
// and value at its own position, then attends each token to positions 0..pos of its sequence, or,
// with attribute `window` W > 0 (a sliding window: Mistral, Qwen2, Gemma), to pos - W + 1..pos.
// With attribute `softcap` C > 0, each scaled score s is C * tanh(s / C) before the softmax.
#pragma once
#include <algorithm>
#include <span>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace fusor {

struct CachedAttentionParams {
  int64_t heads = 0;       // H
  int64_t kv_heads = 0;    // KVH; query head h reads kv head h / (H / KVH)
  int64_t tokens = 0;      // T
  int64_t head_dim = 0;    // D
  int64_t blocks = 0;      // NB, blocks in the pool
  int64_t block_size = 0;  // BS, positions per block
  int64_t max_blocks = 0;  // MB, block table entries per token
  float scale = 1.f;
  int64_t window = 0;      // > 0: a token sees only the last `window` positions, its own included
  float softcap = 0;       // > 0: a scaled score s becomes softcap * tanh(s / softcap) (Gemma 2)
  int64_t group() const { return heads / kv_heads; }  // query heads per kv head
  // The first position a token at `pos` attends to.
  int64_t first_key(int64_t pos) const { return window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0; }
};

// Reads the attributes (num_heads, kv_heads, scale, window, softcap) and checks the input types against them;
// throws a one-line fusor::Error naming the node on anything else.
CachedAttentionParams cached_attention_params(const Node& node, std::span<const TensorType> inputs);

// Checks every block id a run will read or write (those of positions 0..pos of each token whose
// pos >= 0) against [0, NB), and pos / BS against MB; throws naming the token. Kernels call it
// before writing anything, so a bad step leaves the caches as they were.
void check_cache_slots(const Node& node, const CachedAttentionParams& p, const int64_t* positions,
                       const int64_t* block_table);

}  // namespace fusor
