#include "generate/kv_pool.h"

#include "fusor/error.h"

namespace fusor {

KvPool::KvPool(int layers, int64_t kv_heads, int64_t head_dim, int64_t block_size, int64_t blocks)
    : kv_heads_(kv_heads), head_dim_(head_dim), block_size_(block_size), blocks_(blocks) {
  if (layers < 1 || kv_heads < 1 || head_dim < 1 || block_size < 1 || blocks < 1)
    throw Error("a KV pool needs at least one layer, head, block and position per block", ErrorKind::InvalidArgument);
  for (int l = 0; l < layers; ++l) {
    keys_.emplace_back(DType::Float32, Dims{blocks, kv_heads, head_dim, block_size});  // transposed per block
    values_.emplace_back(DType::Float32, Dims{blocks, kv_heads, block_size, head_dim});
  }
  free_.reserve(static_cast<size_t>(blocks));
  for (int64_t b = blocks - 1; b >= 0; --b) free_.push_back(b);
}

size_t KvPool::bytes_per_token() const {
  return keys_.size() * 2 * static_cast<size_t>(kv_heads_ * head_dim_) * sizeof(float);
}

bool KvPool::reserve(std::vector<int64_t>& table, int64_t tokens) {
  const int64_t need = (tokens + block_size_ - 1) / block_size_ - static_cast<int64_t>(table.size());
  if (need <= 0) return true;
  if (need > free_blocks()) return false;
  for (int64_t i = 0; i < need; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void KvPool::shrink(std::vector<int64_t>& table, int64_t tokens) {
  const auto keep = static_cast<size_t>((tokens + block_size_ - 1) / block_size_);
  if (table.size() <= keep) return;
  free_.insert(free_.end(), table.rbegin(), table.rend() - static_cast<std::ptrdiff_t>(keep));
  table.resize(keep);
}

void KvPool::release(std::vector<int64_t>& table) {
  free_.insert(free_.end(), table.rbegin(), table.rend());
  table.clear();
}

}  // namespace fusor
