// The KV cache's memory: per layer a key tensor of fixed-size blocks [blocks, kv_heads, head_dim,
// block_size] (each block's keys transposed: ir/cached_attention_params.h), a value tensor
// [blocks, kv_heads, block_size, head_dim], and a free list. A sequence holds a list of blocks (its
// block table); position p of it lives in block table[p / block_size], at p % block_size.
// Blocks are taken as a sequence grows and returned when it ends, so sequences of any length
// share one allocation without fragmenting it (vLLM's paged attention). The tensors are fed to
// the decode plans as shared inputs: CachedAttention appends to them and reads them in place.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusor/tensor.h"

namespace fusor {

class KvPool {
 public:
  KvPool(int layers, int64_t kv_heads, int64_t head_dim, int64_t block_size, int64_t blocks);

  int64_t block_size() const { return block_size_; }
  int64_t blocks() const { return blocks_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  // Keys and values of every layer: layers x 2 x kv_heads x head_dim floats per token.
  size_t bytes_per_token() const;
  size_t bytes() const { return bytes_per_token() * static_cast<size_t>(blocks_ * block_size_); }
  const Tensor& keys(int layer) const { return keys_[static_cast<size_t>(layer)]; }
  const Tensor& values(int layer) const { return values_[static_cast<size_t>(layer)]; }

  // Grows `table` to hold `tokens` positions. False (and `table` unchanged) when the pool has
  // too few free blocks.
  bool reserve(std::vector<int64_t>& table, int64_t tokens);
  // Returns the table's blocks to the pool and clears it.
  void release(std::vector<int64_t>& table);
  // Returns the blocks past those that `tokens` positions need.
  void shrink(std::vector<int64_t>& table, int64_t tokens);

 private:
  int64_t kv_heads_, head_dim_, block_size_, blocks_;
  std::vector<Tensor> keys_, values_;
  std::vector<int64_t> free_;  // a stack: the most recently freed block is reused first
};

}  // namespace fusor
