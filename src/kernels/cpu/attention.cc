// Fused attention, float32: out = softmax(mask(scale * Q K^T)) V per (batch, head), with Q, K, V
// and out in the projections' [B, S, H*D] layout (heads are strided views, so no transposes).
//
// Why this shape: per task (batch, head, block of query rows) the scores of one key block are
// computed into a small buffer, then folded into the output with an online softmax (running max
// m and sum l per row, FlashAttention-style): when a later block raises the max, the partial
// output and sum are rescaled by exp(m_old - m_new). So the [Sq, Sk] score tensor never exists;
// the working set is one [rows, key block] tile. Per score the order of operations is the
// unfused graph's: s * scale, then the causal fill (a causally masked score takes the value
// `fill`, as Where does), then the additive mask. With fill = -inf whole key blocks above the
// diagonal are skipped (they contribute exp(-inf) = 0). A row whose scores are all -inf gives
// NaN, as the reference softmax does. The first key block writes the output accumulators
// instead of rescaling zeros, so at S <= 256 (one block) this is a plain softmax.
//
// Packed (padding-free) mode, issue #15: B = 1 and the S tokens are several sequences laid end
// to end; an extra int64 input gives each token the index of its sequence's first token. Each
// query then sees only the keys of its own sequence (causal within it), and a task is a (sequence,
// head, block of query rows), so no work is spent across sequences.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fusor/error.h"
#include "kernels/cpu/attention_blocks.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

namespace hn = simd::hn;
using simd::D;
using simd::V;

constexpr int64_t kKeyBlock = 256;  // keys per score tile
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct Params {
  int64_t B = 0, H = 0, Sq = 0, Sk = 0, Dh = 0;
  float scale = 1.f;
  bool causal = false;
  float fill = kNegInf;
  bool has_mask = false;
  int segments = -1;  // input index of the per-token sequence starts (packed mode), or -1
  int64_t ms[4] = {0, 0, 0, 0};  // mask strides for (batch, head, query, key); 0 = broadcast
};

class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const Params& p) : p_(p) {
    L_ = static_cast<int64_t>(simd::lanes());
    threads_ = thread_width();
    // Enough query blocks that both cores have work at batch 1 with few heads.
    rows_ = 64;
    while (rows_ > 8 && p_.B * p_.H * ((p_.Sq + rows_ - 1) / rows_) < 4 * threads_) rows_ /= 2;
    nkb_ = std::min(kKeyBlock, p_.Sk);
    nkb_pad_ = round_up(nkb_, L_);
    dpad_ = round_up(p_.Dh, L_);
    pack_v_ = p_.Dh % L_ != 0;
    // Per thread: the K^T cache tag, K^T [D][nkb_pad], packed V [nkb][dpad] (when D is not whole vectors),
    // scores [rows][nkb_pad], output accumulators [rows][dpad], max and sum per row.
    per_thread_ = static_cast<size_t>(kTag + p_.Dh * nkb_pad_ + (pack_v_ ? nkb_ * dpad_ : 0) + rows_ * nkb_pad_ +
                                      rows_ * dpad_ + 2 * rows_);
    per_thread_ = static_cast<size_t>(round_up(static_cast<int64_t>(per_thread_), 16));
    spans_.reserve(static_cast<size_t>(p_.segments >= 0 ? p_.Sq : p_.B));
  }

  size_t scratch_bytes() const override { return per_thread_ * sizeof(float) * static_cast<size_t>(threads_); }

  std::string name() const override {
    std::string n = "attention_f32_d" + std::to_string(p_.Dh);
    if (p_.causal) n += "_causal";
    if (p_.has_mask) n += "_mask";
    if (p_.segments >= 0) n += "_packed";
    return n + "_" + kIsa;
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const Operands ops{in[0].data<float>(), in[1].data<float>(), in[2].data<float>(),
                       p_.has_mask ? in[3].data<float>() : nullptr, out[0].data<float>()};
    if (p_.segments >= 0) {
      read_segments(in[static_cast<size_t>(p_.segments)]);
    } else {
      spans_.clear();
      for (int64_t b = 0; b < p_.B; ++b) spans_.push_back({b, b * p_.Sq, b * p_.Sk, p_.Sq, p_.Sk, 0});
    }
    // Tasks: (span, head, query block), numbered span by span; first_task_ of a span is where its tasks start.
    int64_t tasks = 0;
    for (Span& s : spans_) {
      s.first_task = tasks;
      tasks += p_.H * ((s.nq + rows_ - 1) / rows_);
    }
    float* base = reinterpret_cast<float*>(scratch.data());
    // Contiguous task ranges keep a head's query blocks together, so they share its K^T; more
    // ranges than threads let an idle thread take over from a preempted one.
    const int width = std::min(threads_, thread_width());
    const int64_t per = std::max<int64_t>(1, tasks / (int64_t{width} * 4));
    for (int p = 0; p < width; ++p) set_tag(base + per_thread_ * static_cast<size_t>(p), -1);  // K^T of an earlier run is stale
    parallel_chunks((tasks + per - 1) / per, width, [&](int64_t c, int p) {
      float* ws = base + per_thread_ * static_cast<size_t>(p);
      const int64_t end = std::min(tasks, c * per + per);
      size_t si = span_of(c * per);
      for (int64_t t = c * per; t < end; ++t) {
        while (si + 1 < spans_.size() && spans_[si + 1].first_task <= t) ++si;
        const Span& s = spans_[si];
        const int64_t qblocks = (s.nq + rows_ - 1) / rows_, local = t - s.first_task;
        const int64_t qb = local % qblocks, h = local / qblocks;
        run_task(s, h, qb * rows_, std::min(rows_, s.nq - qb * rows_), ops, ws);
      }
    });
  }

 private:
  struct Operands {
    const float *q, *k, *v, *mask;
    float* o;
  };
  // Queries [q0, q0 + nq) attending to keys [k0, k0 + nk) (token rows of the [B*S, H*D] views);
  // `batch` indexes the mask. Unpacked: one span per batch row. Packed: one per sequence.
  struct Span {
    int64_t batch, q0, k0, nq, nk, first_task;
  };

  // Packed mode: the spans from each token's sequence start (starts[t] == t opens a sequence,
  // later tokens repeat it). Anything else is a caller's bug, refused before any memory is read.
  void read_segments(const Tensor& starts_tensor) {
    const int64_t* starts = starts_tensor.data<int64_t>();
    spans_.clear();
    for (int64_t t = 0; t < p_.Sq; ++t) {
      if (starts[t] == t) {
        spans_.push_back({0, t, t, 1, 1, 0});
      } else if (t > 0 && starts[t] == starts[t - 1]) {
        ++spans_.back().nq;
        ++spans_.back().nk;
      } else {
        throw Error("packed attention: token " + std::to_string(t) + " has sequence start " +
                    std::to_string(starts[t]) + ", not its own index or its predecessor's start");
      }
    }
  }

  // The span holding task t (binary search over first_task).
  size_t span_of(int64_t t) const {
    size_t lo = 0, hi = spans_.size();
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      (spans_[mid].first_task <= t ? lo : hi) = mid;
    }
    return lo;
  }

  // The (batch*head, key block) whose K^T the thread's workspace holds, in its first floats.
  static constexpr int64_t kTag = 16;
  static void set_tag(float* ws, int64_t tag) { std::memcpy(ws, &tag, sizeof(tag)); }
  static int64_t get_tag(const float* ws) {
    int64_t tag;
    std::memcpy(&tag, ws, sizeof(tag));
    return tag;
  }

  void run_task(const Span& sp, int64_t h, int64_t q0, int64_t rows, const Operands& ops, float* ws) const {
    const D d;
    const int64_t hd = p_.H * p_.Dh, Dh = p_.Dh;
    float* kt = ws + kTag;
    float* vp = kt + Dh * nkb_pad_;
    float* s = vp + (pack_v_ ? nkb_ * dpad_ : 0);
    float* acc = s + rows_ * nkb_pad_;
    float* m = acc + rows_ * dpad_;
    float* l = m + rows_;
    const float* qh = ops.q + (sp.q0 + q0) * hd + h * Dh;
    const float* kh = ops.k + sp.k0 * hd + h * Dh;
    const float* vh = ops.v + sp.k0 * hd + h * Dh;
    // The mask's key index: relative to the batch row unpacked, the token itself packed.
    const int64_t mask_key0 = p_.segments >= 0 ? sp.k0 : 0, mask_q0 = p_.segments >= 0 ? sp.q0 : 0;
    std::fill(m, m + rows, kNegInf);
    std::fill(l, l + rows, 0.f);
    // Query row i may see keys up to i + offset; with fill -inf the keys past the last row's
    // limit contribute nothing and are never read.
    const int64_t offset = sp.nk - sp.nq;
    int64_t key_end = sp.nk;
    if (p_.causal && std::isinf(p_.fill) && p_.fill < 0)
      key_end = std::clamp<int64_t>(q0 + rows + offset, 0, sp.nk);
    const V vscale = hn::Set(d, p_.scale);
    for (int64_t k0 = 0; k0 < key_end; k0 += nkb_) {
      const bool first = k0 == 0;  // acc is written, not accumulated, and needs no rescaling
      const int64_t nk = std::min(nkb_, key_end - k0), nk_pad = round_up(nk, L_);
      // K^T for this block, zero-padded to whole vectors; reused while the thread stays on this
      // head (nk is in the tag because a causal query block's key_end shortens the last block).
      const int64_t tag = ((sp.k0 + k0) * p_.H + h) * (nkb_ + 1) + nk;
      if (get_tag(ws) != tag) {
        attention::transpose(kh + k0 * hd, hd, nk, Dh, kt, nk_pad);
        for (int64_t c = 0; c < Dh; ++c) std::fill(kt + c * nk_pad + nk, kt + (c + 1) * nk_pad, 0.f);
        set_tag(ws, tag);
      }
      attention::gemm(rows, nk_pad, Dh, qh, hd, kt, nk_pad, s, nk_pad, false);

      for (int64_t r = 0; r < rows; ++r) {
        float* sr = s + r * nk_pad;
        const int64_t qi = q0 + r;
        const float* mr = ops.mask ? ops.mask + sp.batch * p_.ms[0] + h * p_.ms[1] + (mask_q0 + qi) * p_.ms[2] +
                                         (mask_key0 + k0) * p_.ms[3]
                                   : nullptr;
        const int64_t limit = qi + offset - k0;  // keys j > limit are causally masked
        V vmax = hn::Set(d, kNegInf);
        for (int64_t j = 0; j < nk_pad; j += L_) {
          V x = hn::Mul(hn::LoadU(d, sr + j), vscale);
          const V idx = hn::Add(hn::Iota(d, 0.f), hn::Set(d, static_cast<float>(j)));
          if (p_.causal) x = hn::IfThenElse(hn::Gt(idx, hn::Set(d, static_cast<float>(limit))), hn::Set(d, p_.fill), x);
          if (mr) {
            if (p_.ms[3] == 1) {
              if (j + L_ <= nk) {
                x = hn::Add(x, hn::LoadU(d, mr + j));
              } else {  // the mask row ends at nk: the tail is a masked load
                auto valid = hn::FirstN(d, static_cast<size_t>(std::max<int64_t>(0, nk - j)));
                x = hn::Add(x, hn::MaskedLoad(valid, d, mr + j));
              }
            } else {
              x = hn::Add(x, hn::Set(d, *mr));
            }
          }
          if (j + L_ > nk) x = hn::IfThenElse(hn::Lt(idx, hn::Set(d, static_cast<float>(nk))), x, hn::Set(d, kNegInf));
          hn::StoreU(x, d, sr + j);
          vmax = hn::Max(vmax, x);
        }
        attention::fold_scores(sr, nk_pad, vmax, m[r], l[r], acc + r * dpad_, dpad_, first);
      }
      // acc += P V for this block; V rows are read in place unless D is not whole vectors.
      const float* vb = vh + k0 * hd;
      int64_t ldv = hd;
      if (pack_v_) {
        attention::pack_rows(vb, hd, nk, Dh, vp, dpad_);
        vb = vp;
        ldv = dpad_;
      }
      attention::gemm(rows, dpad_, nk, s, nk_pad, vb, ldv, acc, dpad_, !first);
    }
    for (int64_t r = 0; r < rows; ++r) {
      // All scores -inf: the reference's softmax is NaN (0/0); l is 0 here, so 0 * inf = NaN too.
      const float inv = m[r] == kNegInf ? std::numeric_limits<float>::quiet_NaN() : 1.f / l[r];
      float* orow = ops.o + (sp.q0 + q0 + r) * hd + h * Dh;
      const float* ar = acc + r * dpad_;
      for (int64_t c = 0; c < Dh; ++c) orow[c] = ar[c] * inv;
    }
  }

  Params p_;
  int64_t L_ = 8, rows_ = 64, nkb_ = kKeyBlock, nkb_pad_ = kKeyBlock, dpad_ = 0;
  bool pack_v_ = false;
  int threads_ = 1;
  size_t per_thread_ = 0;
  std::vector<Span> spans_;  // this run's; capacity reserved at plan time (no allocation per run)
};

}  // namespace

// Inputs: Q [B,Sq,H*D], K and V [B,Sk,H*D], then the additive mask (broadcastable to
// [B,H,Sq,Sk]) when the node's `mask` attribute is "additive"; further inputs (reshape targets,
// constants of the body) are only for the reference. A packed node (attribute `segments`, the
// index of its int64 [1, S] sequence-starts input) has B = 1. Declines anything else.
KernelSelection make_attention_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  Params p;
  p.H = n.attr_int("num_heads", 0);
  p.Dh = n.attr_int("head_dim", 0);
  p.scale = n.attr_float("scale", 1.f);
  p.causal = n.attr_int("causal", 0) != 0;
  p.fill = n.attr_float("fill", kNegInf);
  p.has_mask = n.attr_string("mask", "none") == "additive";
  p.segments = static_cast<int>(n.attr_int("segments", -1));
  const size_t need = p.has_mask ? 4 : 3;
  if (p.segments >= 0 && (static_cast<size_t>(p.segments) < need || static_cast<size_t>(p.segments) >= r.inputs.size() ||
                          !input_is(r, static_cast<size_t>(p.segments), DType::Int64)))
    return nullptr;
  if (p.H <= 0 || p.Dh <= 0 || r.inputs.size() < need || used_outputs(r) != 1 || r.outputs.size() != 1) return nullptr;
  for (size_t i = 0; i < need; ++i)
    if (!input_is(r, i, DType::Float32)) return nullptr;
  const Dims& qd = r.inputs[0].dims;
  const Dims& kd = r.inputs[1].dims;
  if (qd.size() != 3 || kd != r.inputs[2].dims || kd.size() != 3 || qd[0] != kd[0]) return nullptr;
  if (qd[2] != p.H * p.Dh || kd[2] != p.H * p.Dh || r.outputs[0].dims != qd || r.outputs[0].dtype != DType::Float32)
    return nullptr;
  p.B = qd[0];
  p.Sq = qd[1];
  p.Sk = kd[1];
  if (p.B == 0 || p.Sq == 0 || p.Sk == 0) return nullptr;
  if (p.segments >= 0 && (p.B != 1 || p.Sq != p.Sk || numel_of(r.inputs[static_cast<size_t>(p.segments)].dims) != p.Sq))
    return nullptr;
  if (p.has_mask) {
    const Dims& md = r.inputs[3].dims;
    if (md.size() > 4) return nullptr;
    const int64_t full[4] = {p.B, p.H, p.Sq, p.Sk};
    int64_t stride = 1;
    for (size_t i = 0; i < md.size(); ++i) {  // right-aligned, innermost first
      const size_t axis = 3 - i;
      const int64_t dim = md[md.size() - 1 - i];
      if (dim != 1 && dim != full[axis]) return nullptr;
      p.ms[axis] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  return std::make_unique<AttentionKernel>(p);
}

}  // namespace fusor::cpu
