// CachedAttention, float32 (the op: ir/cached_attention_params.h): append this step's keys and
// values to the paged caches in place, then attend each token to its sequence's positions 0..pos.
//
// Why this shape: decode is the hot case, a few tokens each reading its whole sequence from the
// cache. A task is one (run of tokens, kv head): the H/KVH query heads of the group read the same
// K/V rows, and so do the consecutive tokens of one sequence in a prefill (a run: same block
// table, positions p, p + 1, ...; up to kRunTokens), so each cache block is read once for all of
// them, each row masked causally at its own position. Decode tokens are runs of one. Keys go
// in tiles of whole cache blocks (about kTileKeys keys). The cache keeps each block's keys
// transposed ([D, BS]), so where a block is whole vectors of keys (BS a multiple of the vector
// width) one small GEMM reads the tile's key columns in place and gives the group's scores;
// other block sizes are copied into a K^T tile first. (Keys stored as rows were transposed on
// every step: half of a 16-sequence decode step's attention time.) The output is
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
    keys_in_place_ = p_.block_size % L_ == 0;
    // Per thread: the tile's key column pointers or its K^T [D][tile_pad], one packed V block
    // [BS][dpad] (when D is not whole vectors), scores [G*R][tile_pad], output accumulators
    // [G*R][dpad], max and sum per row.
    const int64_t rows = G_ * R_;
    constexpr int64_t kPointerFloats = sizeof(const float*) / sizeof(float);
    keys_floats_ = keys_in_place_ ? round_up(tile_pad_ / L_ * kPointerFloats, 16) : p_.head_dim * tile_pad_;
    const int64_t floats = keys_floats_ + (pack_v_ ? p_.block_size * dpad_ : 0) + rows * tile_pad_ + rows * dpad_ + 2 * rows;
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
    const int64_t BS = p_.block_size;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t pos = ops.positions[t];
      if (pos < 0) continue;
      for (int64_t g = 0; g < p_.kv_heads; ++g) {
        const int64_t block = block_offset(ops, t, pos, g), from = (g * T + t) * Dh;
        float* key_column = ops.key_cache + block + pos % BS;
        for (int64_t c = 0; c < Dh; ++c) key_column[c * BS] = ops.k[from + c];
        std::memcpy(ops.value_cache + block + pos % BS * Dh, ops.v + from, static_cast<size_t>(Dh) * sizeof(float));
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
    float* kt = ws;  // K^T, or the key columns' pointers when the keys are read in place
    const float** columns = reinterpret_cast<const float**>(ws);
    float* vp = kt + keys_floats_;
    float* s = vp + (pack_v_ ? BS * dpad_ : 0);
    float* acc = s + G * R_ * tile_pad_;
    float* m = acc + G * R_ * dpad_;
    float* l = m + G * R_;
    std::fill(m, m + rows, kNegInf);
    std::fill(l, l + rows, 0.f);
    const V vscale = hn::Set(d, p_.scale);
    const V vcap = hn::Set(d, p_.softcap), vinv_cap = hn::Set(d, p_.softcap > 0 ? 1.f / p_.softcap : 0.f);
    const int64_t keys = pos0 + n;  // the last row sees every position up to its own
    // A sliding window: the first row sees nothing before first_key(pos0), later rows less; the
    // tiles start at a whole one (tiles are whole blocks) and mask each row's own start.
    const int64_t start = p_.first_key(pos0) / tile_ * tile_;
    for (int64_t k0 = start; k0 < keys; k0 += tile_) {
      const bool first = k0 == start;  // acc is written, not accumulated, and needs no rescaling
      const int64_t nk = std::min(tile_, keys - k0), nk_pad = round_up(nk, L_);
      // Scores: a decode token's G heads' rows are head_stride apart, one product for all; a
      // run's rows of one head are contiguous, one product per head.
      const int64_t products = n == 1 ? 1 : G, product_rows = n == 1 ? G : n, lda = n == 1 ? head_stride : Dh;
      if (keys_in_place_) {
        // Vector column v holds keys k0 + v * L..: in place in their block (the last one's lanes
        // past nk are other slots of that block, masked below).
        for (int64_t v = 0; v < nk_pad / L_; ++v) {
          const int64_t key = k0 + v * L_;
          columns[v] = ops.key_cache + block_offset(ops, t, key, g) + key % BS;
        }
        for (int64_t h = 0; h < products; ++h)
          attention::gemm_columns(product_rows, nk_pad / L_, Dh, q + h * head_stride, lda, columns, BS,
                                  s + h * n * tile_pad_, tile_pad_, false);
      } else {
        for (int64_t j0 = 0; j0 < nk; j0 += BS) {
          const float* block = ops.key_cache + block_offset(ops, t, k0 + j0, g);
          const int64_t block_keys = std::min(BS, nk - j0);
          for (int64_t c = 0; c < Dh; ++c) std::copy_n(block + c * BS, block_keys, kt + c * tile_pad_ + j0);
        }
        for (int64_t c = 0; c < Dh; ++c) std::fill(kt + c * tile_pad_ + nk, kt + c * tile_pad_ + nk_pad, 0.f);
        for (int64_t h = 0; h < products; ++h)
          attention::gemm(product_rows, nk_pad, Dh, q + h * head_stride, lda, kt, tile_pad_, s + h * n * tile_pad_,
                          tile_pad_, false);
      }

      for (int64_t r = 0; r < rows; ++r) {
        float* sr = s + r * tile_pad_;
        // Keys past the row's own position (and the tile's padding columns), and those before its
        // window, take no weight.
        const int64_t limit = std::min(nk, pos0 + r % n + 1 - k0);
        const int64_t low = p_.first_key(pos0 + r % n) - k0;
        V vmax = hn::Set(d, kNegInf);
        for (int64_t j = 0; j < nk_pad; j += L_) {
          V x = hn::Mul(hn::LoadU(d, sr + j), vscale);
          if (p_.softcap > 0) x = hn::Mul(hn::Tanh(d, hn::Mul(x, vinv_cap)), vcap);
          if (j + L_ > limit || j < low) {
            const V idx = hn::Add(hn::Iota(d, 0.f), hn::Set(d, static_cast<float>(j)));
            const auto kept = hn::And(hn::Lt(idx, hn::Set(d, static_cast<float>(limit))),
                                      hn::Ge(idx, hn::Set(d, static_cast<float>(low))));
            x = hn::IfThenElse(kept, x, hn::Set(d, kNegInf));
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
  int64_t keys_floats_ = 0;  // a thread's scratch for the tile's keys: column pointers or K^T
  std::vector<Run> runs_;  // this run's; capacity reserved at plan time
  bool pack_v_ = false;
  bool keys_in_place_ = false;  // BS is whole vectors: scores read the cache's key columns
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
