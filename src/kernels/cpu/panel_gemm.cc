#include "kernels/cpu/panel_gemm.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using simd::D;
using simd::V;
namespace hn = simd::hn;

constexpr int64_t kLanes = static_cast<int64_t>(HWY_LANES(float));
constexpr int kPanelVectors = 3;
constexpr int64_t kPanelCols = kPanelVectors * kLanes;  // 24 on AVX2
constexpr int kRows = 4;              // rows per inner loop: 4 x 3 accumulators, 3 for the panel, 1 broadcast
constexpr int64_t kMaxKBlock = 384;   // 36 KiB of panel on AVX2: 384 ran 2-5% faster than 128-256
constexpr int64_t kTileRows = 128;    // rows a tile reads per K block: 192 KiB of x, in L2

struct Block {  // one call of the inner loop
  const float* x = nullptr;  // R rows of x from the K block's first column; rows x_stride apart
  int64_t x_stride = 0;
  const float* panel = nullptr;  // the panel's K block
  int64_t kc = 0;
  const float* prefetch = nullptr;  // a slice of the block this thread reads next, prefetch_step floats per k
  int64_t prefetch_step = 0;
  float* y = nullptr;  // R rows from the panel's first column; rows n apart
  int64_t n = 0, row = 0, col = 0, cols = 0;  // the first row and column of y, and the panel's real columns
  bool first = false, last = false;           // first K block (start from zero) / last (apply the epilogue)
};

// sums[R][kPanelCols] = x[R rows][kc] * panel[kc][kPanelCols]. No calls inside, so that the 12
// accumulators stay in registers (with the epilogue's calls in the same function, GCC kept them
// on the stack: ~30 GFLOP/s).
template <int R>
void outer_products(const float* x, int64_t x_stride, const float* panel, int64_t kc, const float* prefetch,
                    int64_t prefetch_step, float* sums) {
  const D d;
  V acc[R][kPanelVectors];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kPanelVectors; ++v) acc[r][v] = hn::Zero(d);
  static_assert(kPanelVectors == 3);
  for (int64_t k = 0; k < kc; ++k) {
    // Named, not an array: GCC stored an array of them to the stack on every k.
    V w0 = hn::LoadU(d, panel + k * kPanelCols), w1 = hn::LoadU(d, panel + k * kPanelCols + kLanes),
      w2 = hn::LoadU(d, panel + k * kPanelCols + 2 * kLanes);
    simd::keep_in_register(w0);
    simd::keep_in_register(w1);
    simd::keep_in_register(w2);
    __builtin_prefetch(prefetch + k * prefetch_step, 0, 2);  // into L2
    for (int r = 0; r < R; ++r) {
      const V xr = hn::Set(d, x[r * x_stride + k]);
      acc[r][0] = hn::MulAdd(xr, w0, acc[r][0]);
      acc[r][1] = hn::MulAdd(xr, w1, acc[r][1]);
      acc[r][2] = hn::MulAdd(xr, w2, acc[r][2]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kPanelVectors; ++v) hn::Store(acc[r][v], d, sums + r * kPanelCols + v * kLanes);
}

// y[R rows][panel] (+)= x[R rows][kc] * panel[kc][kPanelCols], with the epilogue on the last block.
template <int R>
void rows_by_panel(const Block& b, const GemmEpilogue& epilogue, const float* bias,
                   std::span<const float* const> binary) {
  const D d;
  HWY_ALIGN float sums[R * kPanelCols];
  outer_products<R>(b.x, b.x_stride, b.panel, b.kc, b.prefetch, b.prefetch_step, sums);
  if (b.cols == kPanelCols) {  // plain loads and stores: masked stores are slow on AMD
    V s[R][kPanelVectors];
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < kPanelVectors; ++v) {
        s[r][v] = hn::Load(d, sums + r * kPanelCols + v * kLanes);
        if (!b.first) s[r][v] = hn::Add(s[r][v], hn::LoadU(d, b.y + r * b.n + v * kLanes));
      }
    if (b.last) epilogue.apply_block(s, b.row, b.col, bias, binary);
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < kPanelVectors; ++v) hn::StoreU(s[r][v], d, b.y + r * b.n + v * kLanes);
    return;
  }
  for (int64_t j = 0; j < b.cols; j += kLanes) {
    const auto mask = hn::FirstN(d, static_cast<size_t>(std::min(kLanes, b.cols - j)));
    for (int r = 0; r < R; ++r) {
      float* out = b.y + r * b.n + j;
      V s = hn::Load(d, sums + r * kPanelCols + j);
      if (!b.first) s = hn::Add(s, hn::MaskedLoad(mask, d, out));
      if (b.last) s = epilogue.apply(s, b.row + r, b.col + j, mask, bias, binary);
      hn::BlendedStore(s, mask, d, out);
    }
  }
}

void run_rows(int rows, const Block& b, const GemmEpilogue& e, const float* bias, std::span<const float* const> binary) {
  switch (rows) {
    case 4: return rows_by_panel<4>(b, e, bias, binary);
    case 3: return rows_by_panel<3>(b, e, bias, binary);
    case 2: return rows_by_panel<2>(b, e, bias, binary);
    default: return rows_by_panel<1>(b, e, bias, binary);
  }
}

bool env_on() {
  static const bool on = env_switch_on("FUSOR_PANEL_GEMM");  // =0: oneDNN's sgemm, as before
  return on;
}

}  // namespace

std::optional<PanelGemm> PanelGemm::make(const memory::desc& src, const memory::desc& weights,
                                         const float* weights_data, const memory::desc& dst, bool has_bias,
                                         const dnnl::post_ops& post_ops) {
  if (!env_on() || !weights_data || src.data.ndims != 2 || weights.data.ndims != 2) return std::nullopt;
  const int64_t m = src.dims()[0], k = weights.dims()[0], n = weights.dims()[1];
  if (m < 1 || k < 1 || n < 1 || !dense_rows(src, m, k) || !dense_rows(dst, m, n) ||
      weights.data_type() != memory::data_type::f32 || weights.data.format_kind != dnnl_blocked ||
      weights.data.format_desc.blocking.inner_nblks != 0)
    return std::nullopt;
  auto epilogue = GemmEpilogue::make(post_ops, m, n, has_bias);
  if (!epilogue) return std::nullopt;
  const int64_t ks = weights.data.format_desc.blocking.strides[0], ns = weights.data.format_desc.blocking.strides[1];
  const float* w = weights_data + weights.data.offset0;
  const int64_t panels = (n + kPanelCols - 1) / kPanelCols;
  const size_t floats = static_cast<size_t>(panels * k * kPanelCols);
  // Panel p's row i holds w's row i, columns p * kPanelCols on (the last panel's tail is zero):
  // f(panel row, w's first element there, columns).
  auto each_row = [&](auto&& f) {
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t i = 0; i < k; ++i)
        f(static_cast<size_t>((p * k + i) * kPanelCols), w + i * ks + p * kPanelCols * ns,
          std::min(kPanelCols, n - p * kPanelCols));
  };
  auto pack = [&] {
    std::vector<float> packed(floats, 0.f);
    each_row([&](size_t to, const float* from, int64_t cols) {
      for (int64_t j = 0; j < cols; ++j) packed[to + static_cast<size_t>(j)] = from[j * ns];
    });
    return packed;
  };
  auto packed_from_w = [&](const std::vector<float>& packed) {  // bit for bit
    bool same = packed.size() == floats;
    each_row([&](size_t to, const float* from, int64_t cols) {
      if (!same) return;
      if (ns == 1) {
        same = std::memcmp(packed.data() + to, from, static_cast<size_t>(cols) * sizeof(float)) == 0;
        return;
      }
      for (int64_t j = 0; j < cols; ++j)
        same &= std::bit_cast<uint32_t>(packed[to + static_cast<size_t>(j)]) == std::bit_cast<uint32_t>(from[j * ns]);
    });
    return same;
  };
  const int64_t layout[] = {k, n, ks, ns, kPanelCols};
  PanelGemm g;
  g.m_ = m;
  g.k_ = k;
  g.n_ = n;
  g.panels_ = shared_derived_weights(w, layout, pack, packed_from_w);
  g.epilogue_ = std::move(*epilogue);
  return g;
}

void PanelGemm::execute(const float* x, const float* bias, float* y, std::span<const float* const> binary,
                        int64_t rows) const {
  const ColumnSplit whole{0, y, n_};
  execute_split(x, bias, std::span(&whole, 1), binary, rows);
}

void PanelGemm::execute_split(const float* x, const float* bias, std::span<const ColumnSplit> splits,
                              std::span<const float* const> binary, int64_t rows) const {
  const int64_t m = std::clamp<int64_t>(rows, 0, m_);
  zero_rows(splits, n_, m, m_);  // filler rows
  if (m == 0) return;
  const int64_t panels = (n_ + kPanelCols - 1) / kPanelCols, row_tiles = (m + kTileRows - 1) / kTileRows;
  // Tiles of even height: a thread's chunk is about one tile, so a short last tile would leave
  // one thread idle while the other runs a full one (947 rows ran as slow as 1024).
  const int64_t tile_rows = ((m + row_tiles - 1) / row_tiles + kRows - 1) / kRows * kRows;
  const int64_t k_blocks = (k_ + kMaxKBlock - 1) / kMaxKBlock, kc = (k_ + k_blocks - 1) / k_blocks;
  const float* packed = panels_->data();
  const int64_t block_floats = kc * kPanelCols;
  // Tiles row tile by row tile, so that consecutive tiles of a chunk read the same rows of x.
  parallel_range(row_tiles * panels, m * k_ * n_, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t / panels * tile_rows, r1 = std::min(m, r0 + tile_rows);
      const int64_t p = t % panels, c0 = p * kPanelCols;
      const int64_t passes = (r1 - r0 + kRows - 1) / kRows;
      const int64_t cols = std::min(kPanelCols, n_ - c0);
      const size_t out = split_of(splits, c0);  // the output the panel's first column goes to
      // A panel across two outputs (llama's 512-wide Q, then K) is computed into a tile of its
      // own and copied apart; every other panel is stored in place.
      const bool across = out + 1 < splits.size() && splits[out + 1].begin < c0 + cols;
      HWY_ALIGN float own_tile[kTileRows * kPanelCols];
      const ColumnSplit to = across ? ColumnSplit{c0, own_tile, kPanelCols} : splits[out];
      const int64_t first_row = across ? r0 : 0;  // the row that to.dst starts at
      Block b{.x_stride = k_, .n = to.ld, .col = c0, .cols = cols};
      for (int64_t k0 = 0; k0 < k_; k0 += kc) {
        b.kc = std::min(kc, k_ - k0);
        b.panel = packed + (p * k_ + k0) * kPanelCols;
        b.first = k0 == 0;
        b.last = k0 + b.kc == k_;
        // The weights stream from memory (a model's outgrow the cache). Each pass over the block
        // prefetches its share of the next one: the next K block, else the next tile's first.
        const float* next = !b.last ? b.panel + block_floats
                            : t + 1 < t1 ? packed + ((t + 1) % panels) * k_ * kPanelCols
                                         : nullptr;
        const int64_t slice = (block_floats + passes - 1) / passes;
        b.prefetch_step = next ? (slice + b.kc - 1) / b.kc : 0;
        for (int64_t r = r0, pass = 0; r < r1; r += kRows, ++pass) {
          b.x = x + r * k_ + k0;
          b.y = to.dst + (r - first_row) * to.ld + (c0 - to.begin);
          b.row = r;
          b.prefetch = next ? next + pass * slice : b.panel;
          run_rows(static_cast<int>(std::min<int64_t>(kRows, r1 - r)), b, epilogue_, bias, binary);
        }
      }
      if (across) scatter_tile(splits, n_, own_tile, kPanelCols, r0, r1, c0, cols);
    }
  });
}

}  // namespace fusor::cpu
