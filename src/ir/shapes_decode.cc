// Shape functions of the decode family: CachedAttention.
#include "ir/cached_attention_params.h"
#include "ir/op_functions.h"

namespace fusor {

std::vector<TensorType> shape::CachedAttention(const InferContext& ctx) {
  const CachedAttentionParams p = cached_attention_params(ctx.node, ctx.inputs);
  return {{DType::Float32, {1, p.heads, p.tokens, p.head_dim}}};
}

}  // namespace fusor
