// CachedAttention, float32 (the op: ir/cached_attention_params.h): append this step's keys and
// values to the paged caches in place, then attend each token to its sequence's positions 0..pos.
//
// Why this shape: decode is the hot case, a few tokens each reading its whole sequence from the
// cache. A task is one (token, kv head): the H/KVH query heads of the group read the same K/V
// rows, so each cache block is read once for all of them. Keys go in tiles of whole cache blocks
// (about kTileKeys keys): each block's K rows (BS contiguous rows of D floats) are transposed
// into the tile's K^T, one small GEMM gives the group's scores for the tile, and the output is
// folded in with an online softmax (running max and sum per head; a tile that raises the max
// rescales what came before), so no score tensor over all positions exists. P V then runs block
// by block on the V rows in place. The append runs first, in token order, before any task
// starts: tokens of one step see each other, and a slot written twice ends as the reference
// leaves it.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/cached_attention_params.h"
#include "kernels/cpu/attention_blocks.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

namespace hn = simd::hn;
using simd::D;
using simd::V;

constexpr int64_t kTileKeys = 256;  // keys per score tile, rounded to whole cache blocks
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

class CachedAttentionKernel final : public Kernel {
 public:
  CachedAttentionKernel(const Node& node, const CachedAttentionParams& p) : node_(node), p_(p) {
    L_ = static_cast<int64_t>(simd::lanes());
    threads_ = thread_width();
    G_ = p_.group();
    tile_ = std::max<int64_t>(1, kTileKeys / p_.block_size) * p_.block_size;
    tile_pad_ = round_up(tile_, L_);
    dpad_ = round_up(p_.head_dim, L_);
    pack_v_ = p_.head_dim % L_ != 0;
    // Per thread: K^T [D][tile_pad], one packed V block [BS][dpad] (when D is not whole vectors),
    // scores [G][tile_pad], output accumulators [G][dpad], max and sum per head.
    const int64_t floats = p_.head_dim * tile_pad_ + (pack_v_ ? p_.block_size * dpad_ : 0) + G_ * tile_pad_ +
                           G_ * dpad_ + 2 * G_;
    per_thread_ = static_cast<size_t>(round_up(floats, 16));
  }

  size_t scratch_bytes() const override { return per_thread_ * sizeof(float) * static_cast<size_t>(threads_); }

  std::string name() const override {
    return "cached_attention_f32_d" + std::to_string(p_.head_dim) + "_g" + std::to_string(G_) + "_bs" +
           std::to_string(p_.block_size) + "_" + kIsa;
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    Operands ops{in[0].data<float>(), in[1].data<float>(), in[2].data<float>(), in[3].data<int64_t>(),
                 in[4].data<int64_t>(), in[5].data<float>(), in[6].data<float>(), out[0].data<float>()};
    check_cache_slots(node_, p_, ops.positions, ops.table);
    append(ops);
    const int64_t tasks = p_.tokens * p_.kv_heads;
    const int width = std::min(threads_, thread_width());
    // Small chunks: a prefill's tasks differ in length (later tokens see more positions).
    const int64_t per = std::max<int64_t>(1, tasks / (int64_t{width} * 8));
    float* base = reinterpret_cast<float*>(scratch.data());
    parallel_chunks((tasks + per - 1) / per, width, [&](int64_t c, int part) {
      float* ws = base + per_thread_ * static_cast<size_t>(part);
      for (int64_t task = c * per; task < std::min(tasks, c * per + per); ++task)
        run_task(task / p_.kv_heads, task % p_.kv_heads, ops, ws);
    });
  }

 private:
  struct Operands {
    const float *q, *k, *v;
    const int64_t *positions, *table;
    float *key_cache, *value_cache, *out;  // the caches are written in place (op_writes_inputs)
  };

  // Offset of the cache block holding position `pos` of token t's sequence, kv head g.
  int64_t block_offset(const Operands& ops, int64_t t, int64_t pos, int64_t g) const {
    const int64_t block = ops.table[t * p_.max_blocks + pos / p_.block_size];
    return (block * p_.kv_heads + g) * p_.block_size * p_.head_dim;
  }

  void append(const Operands& ops) const {
    const int64_t T = p_.tokens, Dh = p_.head_dim;
    const size_t bytes = static_cast<size_t>(Dh) * sizeof(float);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t pos = ops.positions[t];
      if (pos < 0) continue;
      for (int64_t g = 0; g < p_.kv_heads; ++g) {
        const int64_t at = block_offset(ops, t, pos, g) + pos % p_.block_size * Dh, from = (g * T + t) * Dh;
        std::memcpy(ops.key_cache + at, ops.k + from, bytes);
        std::memcpy(ops.value_cache + at, ops.v + from, bytes);
      }
    }
  }

  // Token t against positions 0..pos of its sequence, for the G query heads of kv head g.
  void run_task(int64_t t, int64_t g, const Operands& ops, float* ws) const {
    const D d;
    const int64_t T = p_.tokens, Dh = p_.head_dim, BS = p_.block_size, G = G_;
    const int64_t head_stride = T * Dh;  // between query (and output) heads of one token
    float* out = ops.out + (g * G * T + t) * Dh;
    const int64_t pos = ops.positions[t];
    if (pos < 0) {
      for (int64_t r = 0; r < G; ++r) std::fill(out + r * head_stride, out + r * head_stride + Dh, 0.f);
      return;
    }
    const float* q = ops.q + (g * G * T + t) * Dh;
    float* kt = ws;
    float* vp = kt + Dh * tile_pad_;
    float* s = vp + (pack_v_ ? BS * dpad_ : 0);
    float* acc = s + G * tile_pad_;
    float* m = acc + G * dpad_;
    float* l = m + G;
    std::fill(m, m + G, kNegInf);
    std::fill(l, l + G, 0.f);
    const V vscale = hn::Set(d, p_.scale);
    const int64_t keys = pos + 1;
    for (int64_t k0 = 0; k0 < keys; k0 += tile_) {
      const bool first = k0 == 0;  // acc is written, not accumulated, and needs no rescaling
      const int64_t nk = std::min(tile_, keys - k0), nk_pad = round_up(nk, L_);
      for (int64_t j0 = 0; j0 < nk; j0 += BS)
        attention::transpose(ops.key_cache + block_offset(ops, t, k0 + j0, g), Dh, std::min(BS, nk - j0), Dh,
                             kt + j0, tile_pad_);
      for (int64_t c = 0; c < Dh; ++c) std::fill(kt + c * tile_pad_ + nk, kt + c * tile_pad_ + nk_pad, 0.f);
      attention::gemm(G, nk_pad, Dh, q, head_stride, kt, tile_pad_, s, tile_pad_, false);

      for (int64_t r = 0; r < G; ++r) {
        float* sr = s + r * tile_pad_;
        V vmax = hn::Set(d, kNegInf);
        for (int64_t j = 0; j < nk_pad; j += L_) {
          V x = hn::Mul(hn::LoadU(d, sr + j), vscale);
          if (j + L_ > nk) {  // the tile's padding columns take no weight
            const V idx = hn::Add(hn::Iota(d, 0.f), hn::Set(d, static_cast<float>(j)));
            x = hn::IfThenElse(hn::Lt(idx, hn::Set(d, static_cast<float>(nk))), x, hn::Set(d, kNegInf));
          }
          hn::StoreU(x, d, sr + j);
          vmax = hn::Max(vmax, x);
        }
        const float m_new = std::max(m[r], hn::GetLane(hn::MaxOfLanes(d, vmax)));
        if (m_new == kNegInf) {  // nothing finite yet: this tile adds nothing (NaN at the end, as the reference)
          std::fill(sr, sr + nk_pad, 0.f);
          continue;
        }
        const float alpha = first ? 0.f : std::exp(m[r] - m_new);
        m[r] = m_new;
        const V vm = hn::Set(d, m_new);
        V vsum = hn::Zero(d);
        for (int64_t j = 0; j < nk_pad; j += L_) {
          const V e = attention::exp_nonpositive(hn::Sub(hn::LoadU(d, sr + j), vm));
          hn::StoreU(e, d, sr + j);
          vsum = hn::Add(vsum, e);
        }
        l[r] = l[r] * alpha + hn::GetLane(hn::SumOfLanes(d, vsum));
        if (!first && alpha != 1.f) {
          const V va = hn::Set(d, alpha);
          float* ar = acc + r * dpad_;
          for (int64_t c = 0; c < dpad_; c += L_) hn::StoreU(hn::Mul(hn::LoadU(d, ar + c), va), d, ar + c);
        }
      }
      // acc += P V, one cache block at a time; V rows are read in place unless D is not whole vectors.
      for (int64_t j0 = 0; j0 < nk; j0 += BS) {
        const int64_t rows = std::min(BS, nk - j0);
        const float* vb = ops.value_cache + block_offset(ops, t, k0 + j0, g);
        int64_t ldv = Dh;
        if (pack_v_) {
          for (int64_t j = 0; j < rows; ++j) {
            std::memcpy(vp + j * dpad_, vb + j * Dh, static_cast<size_t>(Dh) * sizeof(float));
            std::fill(vp + j * dpad_ + Dh, vp + (j + 1) * dpad_, 0.f);
          }
          vb = vp;
          ldv = dpad_;
        }
        attention::gemm(G, dpad_, rows, s + j0, tile_pad_, vb, ldv, acc, dpad_, !(first && j0 == 0));
      }
    }
    for (int64_t r = 0; r < G; ++r) {
      // All scores -inf: the reference's softmax is NaN (0/0); l is 0 here, so 0 * inf = NaN too.
      const float inv = m[r] == kNegInf ? std::numeric_limits<float>::quiet_NaN() : 1.f / l[r];
      const float* ar = acc + r * dpad_;
      float* o = out + r * head_stride;
      for (int64_t c = 0; c < Dh; ++c) o[c] = ar[c] * inv;
    }
  }

  const Node& node_;
  CachedAttentionParams p_;
  int64_t L_ = 8, G_ = 1, tile_ = kTileKeys, tile_pad_ = kTileKeys, dpad_ = 0;
  bool pack_v_ = false;
  int threads_ = 1;
  size_t per_thread_ = 0;
};

}  // namespace

// The shape function has checked the request (ir/cached_attention_params.h); an empty step or
// head dim is left to the reference.
std::unique_ptr<Kernel> make_cached_attention_kernel(const KernelRequest& r) {
  const CachedAttentionParams p = cached_attention_params(r.node, r.inputs);
  if (p.tokens == 0 || p.head_dim == 0 || used_outputs(r) != 1) return nullptr;
  return std::make_unique<CachedAttentionKernel>(r.node, p);
}

}  // namespace fusor::cpu
