// A GEMM of many rows against constant weights that are packed once, at plan time, into panels
// of a few vectors of columns (each panel: K rows of kPanelCols floats, the last one zero-padded),
// on fusor's thread pool, with oneDNN's post-op chain (GemmEpilogue) applied before the store.
//
// Why: without AVX-512, oneDNN 2.6's matmul is its jit sgemm, and sgemm packs its share of the
// weights again on every call. At MiniLM's shapes (384-1536 wide, 32 rows) that copy is a large
// part of the call: one thread ran 32-row GEMMs at ~80 GFLOP/s against ~95 for this loop on
// weights packed once (the sgemm ceiling is ~87 a thread). ONNX Runtime's MLAS packs once too.
//
// The loop: a thread takes a tile (up to kTileRows rows by one panel), and for each block of K
// (up to kMaxKBlock rows of the panel, which stay in L1) runs 4 rows at a time: per k, the panel's
// row is loaded once into registers and each of the 4 rows' values is broadcast against it (an
// outer product into 12 accumulators). Sums carry across K blocks in the output itself.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/column_split.h"
#include "kernels/cpu/gemm_epilogue.h"

namespace fusor::cpu {

class PanelGemm {
 public:
  // nullopt unless `src` is M > 0 dense rows of K floats, `weights` K x N plain (any strides,
  // read from `weights_data` now and packed), `dst` M dense rows of N floats, and the post-ops
  // are GemmEpilogue's.
  static std::optional<PanelGemm> make(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                       const float* weights_data, const dnnl::memory::desc& dst, bool has_bias,
                                       const dnnl::post_ops& post_ops);

  // y = post_ops(x W + bias); `binary` holds one operand per binary post-op, in chain order.
  // Only the first `rows` rows (at most M) are computed; the rest are stored as zeros (a packed
  // plan's filler tokens, Kernel::set_live_rows).
  void execute(const float* x, const float* bias, float* y, std::span<const float* const> binary, int64_t rows) const;

  // execute, storing the columns into `splits` (in column order, the first at 0) instead of one
  // wide result that is copied apart afterwards (merge_projections' Q, K and V): a panel goes
  // straight into its output, or, when it holds the columns of two (an output not a whole number
  // of panels wide), through a tile of its own.
  void execute_split(const float* x, const float* bias, std::span<const ColumnSplit> splits,
                     std::span<const float* const> binary, int64_t rows) const;

  int64_t rows() const { return m_; }
  size_t packed_bytes() const { return panels_->size() * sizeof(float); }

 private:
  int64_t m_ = 0, k_ = 0, n_ = 0;
  std::shared_ptr<const std::vector<float>> panels_;  // shared by source, else content (packed_weights.h)
  GemmEpilogue epilogue_;
};

}  // namespace fusor::cpu
