// Reference CachedAttention (ir/cached_attention_params.h): append this step's keys and values to
// the paged caches in place, then attend each token to its sequence's positions 0..pos (the last
// `window` of them with a window), in plain loops with a max-subtracted softmax accumulated in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/cached_attention_params.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void CachedAttention(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back({t.dtype(), t.dims()});
  const CachedAttentionParams p = cached_attention_params(node, types);
  const int64_t H = p.heads, KVH = p.kv_heads, T = p.tokens, D = p.head_dim, BS = p.block_size;
  const float* q = inputs[0].data<float>();
  const float* k = inputs[1].data<float>();
  const float* v = inputs[2].data<float>();
  const int64_t* positions = inputs[3].data<int64_t>();
  const int64_t* table = inputs[4].data<int64_t>();
  // The caches are the runtime's, passed by reference: this op writes them (op_writes_inputs).
  float* key_cache = inputs[5].data<float>();
  float* value_cache = inputs[6].data<float>();
  float* out = outputs[0].data<float>();
  check_cache_slots(node, p, positions, table);

  // Where position pos of token t's sequence starts in kv head g of a cache: a value row, or the
  // first element of a key column (stride BS).
  auto block_of = [&](int64_t t, int64_t pos, int64_t g) { return (table[t * p.max_blocks + pos / BS] * KVH + g) * BS * D; };
  auto value_slot = [&](int64_t t, int64_t pos, int64_t g) { return block_of(t, pos, g) + pos % BS * D; };
  auto key_slot = [&](int64_t t, int64_t pos, int64_t g) { return block_of(t, pos, g) + pos % BS; };
  for (int64_t t = 0; t < T; ++t) {
    if (positions[t] < 0) continue;
    for (int64_t g = 0; g < KVH; ++g) {
      const int64_t from = (g * T + t) * D, key_at = key_slot(t, positions[t], g);
      for (int64_t c = 0; c < D; ++c) key_cache[key_at + c * BS] = k[from + c];
      std::copy(v + from, v + from + D, value_cache + value_slot(t, positions[t], g));
    }
  }

  std::vector<double> scores, acc(static_cast<size_t>(D));
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / p.group();
    for (int64_t t = 0; t < T; ++t) {
      float* o = out + (h * T + t) * D;
      const int64_t pos = positions[t];
      if (pos < 0) {
        std::fill(o, o + D, 0.f);
        continue;
      }
      const float* qr = q + (h * T + t) * D;
      const int64_t first = p.first_key(pos);
      scores.assign(static_cast<size_t>(pos + 1 - first), 0.0);
      double max = -INFINITY;
      for (int64_t j = first; j <= pos; ++j) {
        const float* kc = key_cache + key_slot(t, j, g);
        double dot = 0;
        for (int64_t c = 0; c < D; ++c) dot += static_cast<double>(qr[c]) * kc[c * BS];
        double score = static_cast<double>(p.scale) * dot;
        if (p.softcap > 0) score = p.softcap * std::tanh(score / p.softcap);
        scores[static_cast<size_t>(j - first)] = score;
        max = std::max(max, scores[static_cast<size_t>(j - first)]);
      }
      double sum = 0;
      for (double& s : scores) sum += s = std::exp(s - max);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = first; j <= pos; ++j) {
        const float* vr = value_cache + value_slot(t, j, g);
        const double w = scores[static_cast<size_t>(j - first)] / sum;
        for (int64_t c = 0; c < D; ++c) acc[static_cast<size_t>(c)] += w * vr[c];
      }
      for (int64_t c = 0; c < D; ++c) o[c] = static_cast<float>(acc[static_cast<size_t>(c)]);
    }
  }
}

}  // namespace fusor::ref
