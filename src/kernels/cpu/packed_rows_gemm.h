// A matmul of a few rows (a decode step's tokens: 2 to kMaxRows) read straight from oneDNN's
// packed brgemm weights (brgemm_panels.h), on fusor's thread pool, with OnednnMatmul's epilogue
// (bias, eltwise, binary add) applied before the store, and split outputs stored in place.
//
// Why: a 16-row decode step streams all of a model's weights (61 MB for llama-tiny, out of L3)
// for only 8 FLOP per weight byte, and brgemm overlapped that stream with its multiply-adds
// poorly (~190 GFLOP/s; ~330 with the weights in L2). This loop reads each panel as 4 streams at
// once (K cut into 4 segments, one row of each per step), so the prefetchers keep 4 streams in
// flight instead of 1, and each thread reads one run of panels front to back. A 16-sequence
// decode step of llama-tiny took 2.8-3.0 ms against brgemm's 3.4-4.0, the same runs alternated
// (`fusor generate --batch --profile`, FUSOR_PACKED_ROWS=0 for brgemm); one stream per panel
// ran slower than brgemm. Each pass of up to 6 rows keeps a K chunk of the 4 segments in L1 for
// the next pass.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <optional>
#include <span>

#include "kernels/cpu/column_split.h"
#include "kernels/cpu/gemm_epilogue.h"

namespace fusor::cpu {

class PackedRowsGemm {
 public:
  // 32 and 48 sequences decoded 5-12% faster than on brgemm; at 64 and more rows the step is
  // bound by the multiply-adds, which brgemm's own kernel does as well.
  static constexpr int64_t kMaxRows = 48;

  // nullopt unless `src` is 2..kMaxRows dense rows of K floats, `weights` brgemm's panels, `dst`
  // as many dense rows of N floats, and the post-ops are GemmEpilogue's.
  static std::optional<PackedRowsGemm> make(const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                                            const dnnl::memory::desc& dst, bool has_bias,
                                            const dnnl::post_ops& post_ops);

  // y = post_ops(x W + bias) for the first `rows` rows (at most M); the rest are stored as zeros
  // (a packed plan's filler tokens). `binary` holds one operand per binary post-op, in order.
  void execute(const float* x, const float* packed, const float* bias, float* y, std::span<const float* const> binary,
               int64_t rows) const;
  // execute, storing the columns into `splits` (in column order, the first at 0).
  void execute_split(const float* x, const float* packed, const float* bias, std::span<const ColumnSplit> splits,
                     std::span<const float* const> binary, int64_t rows) const;

 private:
  int64_t m_ = 0, k_ = 0, n_ = 0, panel_stride_ = 0;
  GemmEpilogue epilogue_;
};

}  // namespace fusor::cpu
