// CachedAttention, float32 (the op: ir/cached_attention_params.h): append this step's keys and
// values to the paged caches in place, then attend each token to its sequence's positions 0..pos.
//
// Why this shape: decode is the hot case, a few tokens each reading its whole sequence from the
// cache. A task is one (run of tokens, kv head): the H/KVH query heads of the group read the same
// K/V rows, and so do the consecutive tokens of one sequence in a prefill (a run: same block
// table, positions p, p + 1, ...; up to kRunTokens), so each cache block is transposed and read
// once for all of them, each row masked causally at its own position. Decode tokens are runs of one. Keys go in tiles of whole cache blocks
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
#include <vector>

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
constexpr int64_t kRunTokens = 16;  // query tokens of one sequence per task
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
    R_ = std::min(kRunTokens, p_.tokens);
    // Per thread: K^T [D][tile_pad], one packed V block [BS][dpad] (when D is not whole vectors),
    // scores [G*R][tile_pad], output accumulators [G*R][dpad], max and sum per row.
    const int64_t rows = G_ * R_;
    const int64_t floats = p_.head_dim * tile_pad_ + (pack_v_ ? p_.block_size * dpad_ : 0) + rows * tile_pad_ +
                           rows * dpad_ + 2 * rows;
    per_thread_ = static_cast<size_t>(round_up(floats, 16));
    runs_.reserve(static_cast<size_t>(p_.tokens));  // no allocation per run
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
    find_runs(ops);
    const int64_t tasks = static_cast<int64_t>(runs_.size()) * p_.kv_heads;
    const int width = std::min(threads_, thread_width());
    // Small chunks: a prefill's tasks differ in length (later tokens see more positions).
    const int64_t per = std::max<int64_t>(1, tasks / (int64_t{width} * 8));
    float* base = reinterpret_cast<float*>(scratch.data());
    parallel_chunks((tasks + per - 1) / per, width, [&](int64_t c, int part) {
      float* ws = base + per_thread_ * static_cast<size_t>(part);
      for (int64_t task = c * per; task < std::min(tasks, c * per + per); ++task)
        run_task(runs_[static_cast<size_t>(task / p_.kv_heads)], task % p_.kv_heads, ops, ws);
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

  // Tokens [t0, t0 + n) of one sequence at consecutive positions: a prefill's rows share keys.
  struct Run {
    int64_t t0, n;
  };

  // Splits the step into runs: a padding token is a run of its own (zero output), and a token
  // extends the previous run when it has the same block table and the next position.
  void find_runs(const Operands& ops) {
    runs_.clear();
    const size_t row_bytes = static_cast<size_t>(p_.max_blocks) * sizeof(int64_t);
    for (int64_t t = 0; t < p_.tokens; ++t) {
      if (!runs_.empty() && t > 0) {
        Run& last = runs_.back();
        const int64_t prev = t - 1;
        if (last.n < R_ && ops.positions[t] >= 0 && ops.positions[prev] >= 0 &&
            ops.positions[t] == ops.positions[prev] + 1 &&
            std::memcmp(ops.table + t * p_.max_blocks, ops.table + prev * p_.max_blocks, row_bytes) == 0) {
          ++last.n;
          continue;
        }
      }
      runs_.push_back({t, 1});
    }
  }

  // The run's tokens against positions 0..pos of their sequence (each row its own pos), for the G
  // query heads of kv head g. Row r * n + i is query head g * G + r, token t0 + i.
  void run_task(const Run& run, int64_t g, const Operands& ops, float* ws) const {
    const D d;
    const int64_t T = p_.tokens, Dh = p_.head_dim, BS = p_.block_size, G = G_, n = run.n, t = run.t0;
    const int64_t rows = G * n;
    const int64_t head_stride = T * Dh;  // between query (and output) heads of one token
    float* out = ops.out + (g * G * T + t) * Dh;
    const int64_t pos0 = ops.positions[t];
    if (pos0 < 0) {
      for (int64_t r = 0; r < G; ++r) std::fill(out + r * head_stride, out + r * head_stride + Dh, 0.f);
      return;
    }
    const float* q = ops.q + (g * G * T + t) * Dh;
    float* kt = ws;
    float* vp = kt + Dh * tile_pad_;
    float* s = vp + (pack_v_ ? BS * dpad_ : 0);
    float* acc = s + G * R_ * tile_pad_;
    float* m = acc + G * R_ * dpad_;
    float* l = m + G * R_;
    std::fill(m, m + rows, kNegInf);
    std::fill(l, l + rows, 0.f);
    const V vscale = hn::Set(d, p_.scale);
    const int64_t keys = pos0 + n;  // the last row sees every position up to its own
    for (int64_t k0 = 0; k0 < keys; k0 += tile_) {
      const bool first = k0 == 0;  // acc is written, not accumulated, and needs no rescaling
      const int64_t nk = std::min(tile_, keys - k0), nk_pad = round_up(nk, L_);
      for (int64_t j0 = 0; j0 < nk; j0 += BS)
        attention::transpose(ops.key_cache + block_offset(ops, t, k0 + j0, g), Dh, std::min(BS, nk - j0), Dh,
                             kt + j0, tile_pad_);
      for (int64_t c = 0; c < Dh; ++c) std::fill(kt + c * tile_pad_ + nk, kt + c * tile_pad_ + nk_pad, 0.f);
      if (n == 1)  // a decode token: its G heads' rows are head_stride apart, one product for all
        attention::gemm(G, nk_pad, Dh, q, head_stride, kt, tile_pad_, s, tile_pad_, false);
      else
        for (int64_t h = 0; h < G; ++h)  // one head's n token rows are contiguous
          attention::gemm(n, nk_pad, Dh, q + h * head_stride, Dh, kt, tile_pad_, s + h * n * tile_pad_, tile_pad_, false);

      for (int64_t r = 0; r < rows; ++r) {
        float* sr = s + r * tile_pad_;
        // Keys past the row's own position (and the tile's padding columns) take no weight.
        const int64_t limit = std::min(nk, pos0 + r % n + 1 - k0);
        V vmax = hn::Set(d, kNegInf);
        for (int64_t j = 0; j < nk_pad; j += L_) {
          V x = hn::Mul(hn::LoadU(d, sr + j), vscale);
          if (j + L_ > limit) {
            const V idx = hn::Add(hn::Iota(d, 0.f), hn::Set(d, static_cast<float>(j)));
            x = hn::IfThenElse(hn::Lt(idx, hn::Set(d, static_cast<float>(limit))), x, hn::Set(d, kNegInf));
          }
          hn::StoreU(x, d, sr + j);
          vmax = hn::Max(vmax, x);
        }
        attention::fold_scores(sr, nk_pad, vmax, m[r], l[r], acc + r * dpad_, dpad_, first);
      }
      // acc += P V, one cache block at a time; V rows are read in place unless D is not whole vectors.
      for (int64_t j0 = 0; j0 < nk; j0 += BS) {
        const int64_t block_rows = std::min(BS, nk - j0);
        const float* vb = ops.value_cache + block_offset(ops, t, k0 + j0, g);
        int64_t ldv = Dh;
        if (pack_v_) {
          attention::pack_rows(vb, Dh, block_rows, Dh, vp, dpad_);
          vb = vp;
          ldv = dpad_;
        }
        attention::gemm(rows, dpad_, block_rows, s + j0, tile_pad_, vb, ldv, acc, dpad_, !(first && j0 == 0));
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      // All scores -inf: the reference's softmax is NaN (0/0); l is 0 here, so 0 * inf = NaN too.
      const float inv = m[r] == kNegInf ? std::numeric_limits<float>::quiet_NaN() : 1.f / l[r];
      const float* ar = acc + r * dpad_;
      float* o = out + (r / n) * head_stride + (r % n) * Dh;
      for (int64_t c = 0; c < Dh; ++c) o[c] = ar[c] * inv;
    }
  }

  const Node& node_;
  CachedAttentionParams p_;
  int64_t L_ = 8, G_ = 1, R_ = 1, tile_ = kTileKeys, tile_pad_ = kTileKeys, dpad_ = 0;
  std::vector<Run> runs_;  // this run's; capacity reserved at plan time
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
