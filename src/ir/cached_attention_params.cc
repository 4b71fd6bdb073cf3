#include "ir/cached_attention_params.h"

#include <cmath>
#include <string>

#include "ir/shape_util.h"

namespace fusor {
namespace {

void require(const Node& node, std::span<const TensorType> in, size_t i, const char* name, DType dtype, size_t rank) {
  if (i >= in.size() || in[i].dtype == DType::Undefined)
    fail(node, std::string("needs input ") + std::to_string(i) + " (" + name + ")", ErrorKind::InvalidModel);
  if (in[i].dtype != dtype)
    fail(node, std::string(name) + " must be " + dtype_name(dtype) + ", got " + dtype_name(in[i].dtype),
         ErrorKind::InvalidModel);
  if (in[i].dims.size() != rank)
    fail(node, std::string(name) + " must have rank " + std::to_string(rank) + ", got " + dims_to_string(in[i].dims),
         ErrorKind::InvalidModel);
}

void expect_dims(const Node& node, const char* name, const Dims& got, const Dims& want) {
  if (got != want)
    fail(node, std::string(name) + " must be " + dims_to_string(want) + ", got " + dims_to_string(got),
         ErrorKind::InvalidModel);
}

}  // namespace

CachedAttentionParams cached_attention_params(const Node& node, std::span<const TensorType> in) {
  CachedAttentionParams p;
  p.heads = node.attr_int("num_heads", 0);
  p.kv_heads = node.attr_int("kv_heads", 0);
  p.scale = node.attr_float("scale", 1.f);
  if (!node.has_attr("scale")) fail(node, "needs attribute 'scale'", ErrorKind::InvalidModel);
  p.window = node.attr_int("window", 0);
  if (p.window < 0) fail(node, "window must be 0 (none) or positive, got " + std::to_string(p.window), ErrorKind::InvalidModel);
  p.softcap = node.attr_float("softcap", 0.f);
  if (!(p.softcap >= 0.f) || std::isinf(p.softcap))
    fail(node, "softcap must be 0 (none) or positive and finite, got " + std::to_string(p.softcap), ErrorKind::InvalidModel);
  if (p.heads < 1 || p.kv_heads < 1 || p.heads % p.kv_heads != 0)
    fail(node, "num_heads (" + std::to_string(p.heads) + ") must be a positive multiple of kv_heads (" +
                   std::to_string(p.kv_heads) + ")", ErrorKind::InvalidModel);
  if (in.size() != 7) fail(node, "takes 7 inputs, got " + std::to_string(in.size()), ErrorKind::InvalidModel);
  require(node, in, 0, "query", DType::Float32, 4);
  require(node, in, 1, "key", DType::Float32, 4);
  require(node, in, 2, "value", DType::Float32, 4);
  require(node, in, 3, "positions", DType::Int64, 2);
  require(node, in, 4, "block_table", DType::Int64, 3);
  require(node, in, 5, "key_cache", DType::Float32, 4);
  require(node, in, 6, "value_cache", DType::Float32, 4);
  const Dims& q = in[0].dims;
  const Dims& cache = in[5].dims;
  p.tokens = q[2];
  p.head_dim = q[3];
  p.blocks = cache[0];
  p.block_size = cache[3];
  p.max_blocks = in[4].dims[2];
  expect_dims(node, "query", q, {1, p.heads, p.tokens, p.head_dim});
  expect_dims(node, "key", in[1].dims, {1, p.kv_heads, p.tokens, p.head_dim});
  expect_dims(node, "value", in[2].dims, {1, p.kv_heads, p.tokens, p.head_dim});
  expect_dims(node, "positions", in[3].dims, {1, p.tokens});
  expect_dims(node, "block_table", in[4].dims, {1, p.tokens, p.max_blocks});
  expect_dims(node, "key_cache", cache, {p.blocks, p.kv_heads, p.head_dim, p.block_size});
  expect_dims(node, "value_cache", in[6].dims, {p.blocks, p.kv_heads, p.block_size, p.head_dim});
  if (p.block_size < 1) fail(node, "the caches' block size must be at least 1, got " + dims_to_string(cache),
                             ErrorKind::InvalidModel);
  return p;
}

void check_cache_slots(const Node& node, const CachedAttentionParams& p, const int64_t* positions,
                       const int64_t* block_table) {
  for (int64_t t = 0; t < p.tokens; ++t) {
    const int64_t pos = positions[t];
    if (pos < 0) continue;
    const int64_t last = pos / p.block_size;
    if (last >= p.max_blocks)
      fail(node, "token " + std::to_string(t) + " at position " + std::to_string(pos) + " needs block " +
                     std::to_string(last) + " of its table, which has " + std::to_string(p.max_blocks),
           ErrorKind::InvalidArgument);
    const int64_t* row = block_table + t * p.max_blocks;
    for (int64_t i = 0; i <= last; ++i)
      if (row[i] < 0 || row[i] >= p.blocks)
        fail(node, "token " + std::to_string(t) + ": block table entry " + std::to_string(i) + " is " +
                       std::to_string(row[i]) + ", outside the pool's " + std::to_string(p.blocks) + " blocks",
             ErrorKind::InvalidArgument);
  }
}

}  // namespace fusor
