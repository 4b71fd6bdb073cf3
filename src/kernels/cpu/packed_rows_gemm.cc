#include "kernels/cpu/packed_rows_gemm.h"

#include <algorithm>
#include <array>
#include <atomic>

#include "kernels/cpu/brgemm_panels.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using simd::D;
using simd::V;
namespace hn = simd::hn;

constexpr int64_t kPanel = brgemm_panels::kCols;
constexpr int64_t kLanes = static_cast<int64_t>(HWY_LANES(float));
constexpr int kVecs = static_cast<int>(kPanel / kLanes);  // 4 on AVX-512
constexpr int kTileRows = std::max(1, 24 / kVecs);        // 24 accumulators: 6 rows on AVX-512
constexpr int kStreams = 4;      // K segments read side by side: 2 and 8 ran slower, 1 much slower
constexpr int64_t kKChunk = 8;   // rows of each segment per pass (8 KiB): 4-8 ran faster than 16-64

// acc[R][kPanel] (+)= x[R rows][rows k] * panel[rows k][kPanel] over the rows k = k0 + i + s * seg
// for i < kc and s < S: S segments of the panel read side by side. No calls inside, so that the
// accumulators stay in registers.
template <int R, int S>
void rows_by_panel(const float* x, int64_t ldx, const float* panel, int64_t k0, int64_t kc, int64_t seg, float* acc,
                   bool first) {
  const D d;
  V a[R][kVecs];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) a[r][v] = first ? hn::Zero(d) : hn::Load(d, acc + r * kPanel + v * kLanes);
  for (int64_t i = 0; i < kc; ++i)
    for (int s = 0; s < S; ++s) {
      const int64_t k = k0 + i + s * seg;
      const float* row = panel + k * kPanel;
      if constexpr (kVecs == 4) {
        // Named, not an array: GCC stored an array of them to the stack on every k.
        V w0 = hn::Load(d, row), w1 = hn::Load(d, row + kLanes), w2 = hn::Load(d, row + 2 * kLanes),
          w3 = hn::Load(d, row + 3 * kLanes);
        simd::keep_in_register(w0);
        simd::keep_in_register(w1);
        simd::keep_in_register(w2);
        simd::keep_in_register(w3);
        for (int r = 0; r < R; ++r) {
          const V xr = hn::Set(d, x[r * ldx + k]);
          a[r][0] = hn::MulAdd(xr, w0, a[r][0]);
          a[r][1] = hn::MulAdd(xr, w1, a[r][1]);
          a[r][2] = hn::MulAdd(xr, w2, a[r][2]);
          a[r][3] = hn::MulAdd(xr, w3, a[r][3]);
        }
      } else {  // narrower vectors (the layout only arises on AVX-512; tests run it anywhere)
        for (int r = 0; r < R; ++r) {
          const V xr = hn::Set(d, x[r * ldx + k]);
          for (int v = 0; v < kVecs; ++v) a[r][v] = hn::MulAdd(xr, hn::Load(d, row + v * kLanes), a[r][v]);
        }
      }
    }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) hn::Store(a[r][v], d, acc + r * kPanel + v * kLanes);
}

template <int S>
void rows_by_panel(int rows, const float* x, int64_t ldx, const float* panel, int64_t k0, int64_t kc, int64_t seg,
                   float* acc, bool first) {
  static_assert(kTileRows <= 6);
  switch (rows) {
    case 6: return rows_by_panel<6, S>(x, ldx, panel, k0, kc, seg, acc, first);
    case 5: return rows_by_panel<5, S>(x, ldx, panel, k0, kc, seg, acc, first);
    case 4: return rows_by_panel<4, S>(x, ldx, panel, k0, kc, seg, acc, first);
    case 3: return rows_by_panel<3, S>(x, ldx, panel, k0, kc, seg, acc, first);
    case 2: return rows_by_panel<2, S>(x, ldx, panel, k0, kc, seg, acc, first);
    default: return rows_by_panel<1, S>(x, ldx, panel, k0, kc, seg, acc, first);
  }
}

// tile[m][kPanel] = x[m rows][K] * panel[K][kPanel].
void panel_product(const float* x, int64_t m, int64_t k, const float* panel, float* tile) {
  const int64_t seg = k / kStreams, rest = kStreams * seg;
  auto passes = [&](auto run) {
    for (int64_t r = 0; r < m; r += kTileRows)
      run(static_cast<int>(std::min<int64_t>(kTileRows, m - r)), x + r * k, tile + r * kPanel);
  };
  for (int64_t k0 = 0; k0 < seg; k0 += kKChunk) {
    const int64_t kc = std::min(kKChunk, seg - k0);
    passes([&](int rows, const float* xr, float* acc) {
      rows_by_panel<kStreams>(rows, xr, k, panel, k0, kc, seg, acc, k0 == 0);
    });
  }
  if (rest < k)  // the rows past the last whole segment
    passes([&](int rows, const float* xr, float* acc) {
      rows_by_panel<1>(rows, xr, k, panel, rest, k - rest, 0, acc, seg == 0);
    });
}

// A thread's run of panels [front, back): its owner takes from the front, the others from the back.
class PanelRun {
 public:
  void reset(int64_t front, int64_t back) { v_.store(pack(front, back), std::memory_order_relaxed); }
  int64_t take_front() { return take(true); }
  int64_t take_back() { return take(false); }

 private:
  static uint64_t pack(int64_t front, int64_t back) {
    return static_cast<uint64_t>(front) << 32 | static_cast<uint64_t>(back);
  }
  int64_t take(bool front) {  // the panel taken, or -1 when the run is done
    uint64_t v = v_.load(std::memory_order_relaxed);
    for (;;) {
      const auto f = static_cast<int64_t>(v >> 32), b = static_cast<int64_t>(v & 0xffffffffu);
      if (f >= b) return -1;
      if (v_.compare_exchange_weak(v, front ? pack(f + 1, b) : pack(f, b - 1), std::memory_order_relaxed))
        return front ? f : b - 1;
    }
  }
  std::atomic<uint64_t> v_{0};
};
constexpr int64_t kMaxRuns = 64;  // threads that share one GEMM

bool env_on() {
  static const bool on = env_switch_on("FUSOR_PACKED_ROWS");  // =0: brgemm runs few-row GEMMs too
  return on;
}

}  // namespace

std::optional<PackedRowsGemm> PackedRowsGemm::make(const memory::desc& src, const memory::desc& weights,
                                                   const memory::desc& dst, bool has_bias,
                                                   const dnnl::post_ops& post_ops) {
  if (!env_on() || src.data.ndims != 2 || weights.data.ndims != 2) return std::nullopt;
  const int64_t m = src.dims()[0], k = weights.dims()[0], n = weights.dims()[1];
  const auto stride = brgemm_panels::panel_stride(weights);
  if (m < 2 || m > kMaxRows || k < 1 || n < 1 || !stride || !dense_rows(src, m, k) || !dense_rows(dst, m, n))
    return std::nullopt;
  auto epilogue = GemmEpilogue::make(post_ops, m, n, has_bias);
  if (!epilogue) return std::nullopt;
  PackedRowsGemm g;
  g.m_ = m;
  g.k_ = k;
  g.n_ = n;
  g.panel_stride_ = *stride;
  g.epilogue_ = std::move(*epilogue);
  return g;
}

void PackedRowsGemm::execute(const float* x, const float* packed, const float* bias, float* y,
                             std::span<const float* const> binary, int64_t rows) const {
  const ColumnSplit whole{0, y, n_};
  execute_split(x, packed, bias, std::span(&whole, 1), binary, rows);
}

void PackedRowsGemm::execute_split(const float* x, const float* packed, const float* bias,
                                   std::span<const ColumnSplit> splits, std::span<const float* const> binary,
                                   int64_t rows) const {
  const int64_t m = std::clamp<int64_t>(rows, 0, m_);
  zero_rows(splits, n_, m, m_);  // filler rows
  if (m == 0) return;
  const int64_t panels = (n_ + kPanel - 1) / kPanel;
  // One run of whole panels per thread, front to back: each thread's weights are one stream
  // through memory (parallel_range's several chunks a thread, claimed in turn, made them jump:
  // 5-10% slower). A thread done with its run takes panels from the back of the others', so one
  // the OS preempts (the server's network threads) does not hold up the rest. A GEMM too small to
  // pay for a second thread (parallel_range's threshold) runs on the calling thread alone.
  const bool small = m * k_ * n_ < kParallelThreshold;
  const int width = small ? 1 : static_cast<int>(std::min<int64_t>({thread_width(), panels, kMaxRuns}));
  std::array<PanelRun, kMaxRuns> runs;
  for (int i = 0; i < width; ++i) runs[static_cast<size_t>(i)].reset(panels * i / width, panels * (i + 1) / width);
  const D d;
  auto one_panel = [&](int64_t p, float* tile) {  // tile: kMaxRows x kPanel
    const int64_t c0 = p * kPanel, cols = std::min(kPanel, n_ - c0);
    panel_product(x, m, k_, packed + p * panel_stride_, tile);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < cols; j += kLanes) {
        const int64_t c = c0 + j, lanes = std::min(kLanes, cols - j);
        const auto mask = hn::FirstN(d, static_cast<size_t>(lanes));
        const V v = epilogue_.apply(hn::Load(d, tile + r * kPanel + j), r, c, mask, bias, binary);
        const size_t o = split_of(splits, c);
        const ColumnSplit& to = splits[o];
        if (to.begin + split_columns(splits, o, n_) >= c + lanes) {
          hn::BlendedStore(v, mask, d, to.dst + r * to.ld + (c - to.begin));
        } else {  // the vector spans two outputs
          hn::Store(v, d, tile + r * kPanel + j);
          scatter_tile(splits, n_, tile + r * kPanel + j, kPanel, r, r + 1, c, lanes);
        }
      }
  };
  parallel_chunks(width, width, [&](int64_t own, int) {
    HWY_ALIGN float tile[kMaxRows * kPanel];
    for (int64_t k = 0; k < width; ++k) {
      PanelRun& run = runs[static_cast<size_t>((own + k) % width)];
      for (int64_t p; (p = k == 0 ? run.take_front() : run.take_back()) >= 0;) one_panel(p, tile);
    }
  });
}

}  // namespace fusor::cpu
