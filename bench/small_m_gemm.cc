// small_m_gemm: GFLOP/s of GEMMs of few rows against constant weights, as AVX2 hosts run them:
// llama-tiny's decode steps, or MiniLM's projections at short lengths (--model minilm). Each is
// run by fusor's few-row kernel (PackedGemv, on the transposed "ba" layout that oneDNN's gemm
// asks for on AVX2), by tiles of single-threaded oneDNN calls on the pool (MatmulTileSplit), by
// one oneDNN call on its OpenMP team, and by fusor's GEMM on weights it packed itself
// (PanelGemm), and by one oneDNN call on weights reordered once into the layout it picks (its
// brgemm on AVX-512: how fusor's packed MatMul ran there), and by fusor's few-row loop on those
// reordered weights (PackedRowsGemm: how it runs 2-48 rows there now). Alternates the six per
// repeat; prints the medians.
//   small_m_gemm [--threads N] [--repeats N] [--rows 2,4,8,16,32] [--model llama|minilm]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/matmul_tile_split.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/packed_gemv.h"
#include "kernels/cpu/packed_rows_gemm.h"
#include "kernels/cpu/panel_gemm.h"
#include "kernels/cpu/thread_pool.h"

using namespace fusor::cpu;
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

double seconds_of(const std::function<void()>& f, int calls) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 7;
  bool minilm = false;
  std::vector<int64_t> row_counts = {1, 2, 4, 8, 12, 16, 24, 32};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--model")) minilm = !std::strcmp(argv[i + 1], "minilm");
    else if (!std::strcmp(argv[i], "--rows")) {
      row_counts.clear();
      std::stringstream s(argv[i + 1]);
      for (std::string x; std::getline(s, x, ',');) row_counts.push_back(std::stoll(x));
    }
  }
  set_thread_width(threads);
  auto& eng = onednn::engine();
  struct Shape { int64_t k, n; const char* what; };
  std::printf("%-22s %4s %10s %10s %10s %10s %10s %10s   GFLOP/s\n", "shape", "rows", "few-row", "tiles", "oneDNN",
              "panels", "reordered", "rows");
  const std::vector<Shape> llama = {{512, 768, "qkv"}, {512, 2752, "gate+up"}, {1376, 512, "down"}, {512, 8192, "lm_head"}};
  const std::vector<Shape> bert = {{384, 1152, "qkv"}, {384, 384, "out"}, {384, 1536, "up"}, {1536, 384, "down"}};
  for (Shape sh : minilm ? bert : llama) {
    // Enough copies of the weights that they stream from memory, as a decode step's do (its
    // layers' weights together outgrow the last-level cache); each call takes the next copy.
    const size_t floats = static_cast<size_t>(sh.k * sh.n);
    const int copies = static_cast<int>(std::max<size_t>(1, (size_t{128} << 20) / (floats * sizeof(float))));
    std::vector<float> w(floats * static_cast<size_t>(copies));
    for (int c = 0; c < copies; ++c)  // unequal copies: PanelGemm would share equal ones
      std::fill_n(w.begin() + static_cast<std::ptrdiff_t>(floats) * c, floats, 0.01f + 1e-6f * static_cast<float>(c));
    std::vector<memory> wmems;
    for (int c = 0; c < copies; ++c)
      wmems.emplace_back(memory::desc({sh.k, sh.n}, dt::f32, tag::ba), eng, w.data() + floats * static_cast<size_t>(c));
    const memory& wmem = wmems[0];
    int next = 0;
    auto copy = [&] { next = (next + 1) % copies; return next; };
    for (int64_t m : row_counts) {
      const memory::desc src({m, sh.k}, dt::f32, tag::ab), dst({m, sh.n}, dt::f32, tag::ab), none;
      std::vector<float> x(static_cast<size_t>(m * sh.k), 0.5f), y(static_cast<size_t>(m * sh.n));
      const dnnl::post_ops po;
      auto kernel = PackedGemv::make(src, wmem.get_desc(), dst, false, po);
      auto tiles = MatmulTileSplit::make({src, wmem.get_desc(), none, dst, po, {}, {}}, threads);
      std::vector<PanelGemm> panels;  // one per copy, from the copy's plain (K x N) view
      for (int c = 0; c < copies; ++c)
        if (auto g = PanelGemm::make(src, memory::desc({sh.k, sh.n}, dt::f32, memory::dims{1, sh.k}),
                                     w.data() + floats * static_cast<size_t>(c), dst, false, po))
          panels.push_back(std::move(*g));
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wmem.get_desc(), dst), eng);
      dnnl::matmul prim(pd);
      std::vector<std::byte> scratch(std::max(tiles ? tiles->scratch_bytes() : 0, pd.scratchpad_desc().get_size()));
      memory xm(src, eng, x.data()), ym(dst, eng, y.data()), sm(pd.scratchpad_desc(), eng, scratch.data());
      // Weights in the layout oneDNN picks for this M (format any), reordered once per copy.
      const memory::desc any_w({sh.k, sh.n}, dt::f32, tag::any);
      dnnl::matmul::primitive_desc packed_pd(dnnl::matmul::desc(src, any_w, dst), eng);
      dnnl::matmul packed_prim(packed_pd);
      std::vector<memory> packed_w;
      for (const memory& plain : wmems) {
        packed_w.emplace_back(packed_pd.weights_desc(), eng);
        dnnl::reorder(plain, packed_w.back()).execute(onednn::stream(), const_cast<memory&>(plain), packed_w.back());
      }
      onednn::stream().wait();
      std::vector<std::byte> packed_scratch(packed_pd.scratchpad_desc().get_size());
      memory psm(packed_pd.scratchpad_desc(), eng, packed_scratch.data());
      const auto rows_kernel = PackedRowsGemm::make(src, packed_pd.weights_desc(), dst, false, po);
      std::function<void()> runs[6] = {
          [&] { if (kernel) kernel->execute(x.data(), w.data() + floats * copy(), nullptr, y.data(), {}); },
          [&] { if (tiles) tiles->execute(x.data(), w.data() + floats * copy(), nullptr, y.data(), {}, scratch); },
          [&] {
            onednn::OmpThreads team(threads);
            prim.execute(onednn::stream(), {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wmems[copy()]}, {DNNL_ARG_DST, ym},
                                            {DNNL_ARG_SCRATCHPAD, sm}});
            onednn::stream().wait();
          },
          [&] { if (!panels.empty()) panels[static_cast<size_t>(copy())].execute(x.data(), nullptr, y.data(), {}, m); },
          [&] {
            onednn::OmpThreads team(threads);
            packed_prim.execute(onednn::stream(), {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, packed_w[static_cast<size_t>(copy())]},
                                                   {DNNL_ARG_DST, ym}, {DNNL_ARG_SCRATCHPAD, psm}});
            onednn::stream().wait();
          },
          [&] {
            if (rows_kernel)
              rows_kernel->execute(x.data(), static_cast<const float*>(packed_w[static_cast<size_t>(copy())].get_data_handle()),
                                   nullptr, y.data(), {}, m);
          }};
      const int calls = std::max<int>(3, static_cast<int>(4e8 / (2.0 * m * sh.k * sh.n + 2e6)));
      std::vector<double> t[6];
      for (int r = 0; r < repeats; ++r)
        for (int i = 0; i < 6; ++i) t[i].push_back(seconds_of(runs[i], calls));
      const double flop = 2.0 * m * sh.k * sh.n;
      auto rate = [&](int i, bool ran) { return ran ? flop / median(t[i]) / 1e9 : 0.0; };
      std::printf("%-8s %5lldx%-6lld %4lld %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", sh.what, static_cast<long long>(sh.k),
                  static_cast<long long>(sh.n), static_cast<long long>(m), rate(0, kernel.has_value()),
                  rate(1, tiles.has_value()), rate(2, true), rate(3, !panels.empty()), rate(4, true),
                  rate(5, rows_kernel.has_value()));
    }
  }
}
