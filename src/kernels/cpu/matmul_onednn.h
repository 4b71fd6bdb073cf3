// A oneDNN 2.6 f32 matmul with its primitive shared through the shape-keyed cache and, when the
// weights are a plan-time constant, the weights reordered into the primitive's preferred (packed)
// layout, shared with every kernel that packs the same bytes alike (packed_weights.h). Gemm, MatMul and later fused GEMM-epilogue kernels are built on it.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/matmul_tile_split.h"
#include "kernels/kernel.h"
#include "kernels/cpu/packed_gemv.h"
#include "kernels/cpu/packed_rows_gemm.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/onednn_post_ops.h"
#include "kernels/cpu/panel_gemm.h"

namespace fusor::cpu {

class OnednnMatmul {
 public:
  struct Spec {
    dnnl::memory::desc src, weights, dst;   // plain user layouts (strides allowed)
    dnnl::memory::desc bias;                // zero desc when there is no bias
    const float* const_weights = nullptr;   // packed when set (shared: packed_weights.h)
    const float* const_bias = nullptr;      // copied once when set
    dnnl::post_ops post_ops;
    std::vector<dnnl::memory::desc> binary_mds;  // src1 desc of each binary post-op, in order
    std::vector<int> binary_indices;             // post-op index of each binary post-op
  };

  // Throws dnnl::error when oneDNN does not support the combination.
  explicit OnednnMatmul(Spec spec);

  // `weights` and `bias` are ignored when they were constant at build time. `binary` holds one
  // pointer per binary post-op, in Spec order. `scratch` has scratch_bytes() bytes. Rebinds the
  // cached memory handles and runs: no allocation.
  void execute(const float* src, const float* weights, const float* bias, float* dst,
               std::span<const float* const> binary, std::span<std::byte> scratch);

  // Whether execute_split can store the result straight into several outputs side by side
  // (fusor's panel GEMM or few-row loop, with no bias or a constant one).
  bool splits_columns() const { return (panel_ || rows_) && (spec_.bias.is_zero() || !bias_copy_.empty()); }
  // execute into `splits` (ColumnSplit: columns from `begin` go to `dst`, rows `ld`
  // apart) instead of one wide result; only where splits_columns said so.
  void execute_split(const float* src, std::span<const ColumnSplit> splits,
                     std::span<const float* const> binary) const;

  // Only the first `rows` rows carry data from now on (Kernel::set_live_rows; M: all of them).
  // fusor's panel GEMM and few-row loop store zeros in the others; oneDNN's paths compute them all.
  void set_live_rows(int64_t rows) { live_rows_ = rows; }

  bool packed() const { return packed_weights_ != nullptr || panel_.has_value(); }
  // Whether oneDNN's OpenMP team runs it; else fusor's thread pool does (tiles, one-row GEMV,
  // few rows, panels), or the calling thread alone (a GEMM too small for a team).
  bool uses_openmp() const { return !split_ && !fusor_loop() && !single_thread_; }
  // Kernel::drops_nan: oneDNN's paths apply a ReLU as max(x, 0); fusor's own loops keep NaN.
  bool drops_nan() const { return !fusor_loop() && onednn::post_ops_drop_nan(spec_.post_ops); }
  size_t scratch_bytes() const;
  std::string impl() const;  // oneDNN's implementation name, e.g. "brg:avx512_core", or "fusor:panel_gemm"
  // How a kernel's name on it ends, saying what runs: "_panel" (fusor's GEMM on panels), "_gemv"
  // (fusor's one-row loop), "_rows" (its few-row loop on brgemm's panels), else "_onednn_packed"
  // or "_onednn" (oneDNN's matmul).
  std::string name_suffix() const;

 private:
  bool fusor_loop() const { return gemv_ || rows_ || panel_; }
  struct Entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };
  Spec spec_;
  std::shared_ptr<Entry> entry_;
  std::shared_ptr<const PackedWeights> packed_weights_;
  std::vector<float> bias_copy_;
  // Memory objects and the argument map, built once; execute() only swaps data handles.
  dnnl::memory src_mem_, weights_mem_, dst_mem_, bias_mem_, scratch_mem_;
  std::vector<dnnl::memory> binary_mems_;
  std::unordered_map<int, dnnl::memory> args_;  // keeps the memory objects alive
  std::vector<dnnl_exec_arg_t> arg_list_;
  std::optional<MatmulTileSplit> split_;  // set when tiles run on the thread pool
  std::optional<PackedGemv> gemv_;       // set when one row runs on fusor's own loop
  std::optional<PackedRowsGemm> rows_;   // set when a few rows run on fusor's own loop
  std::optional<PanelGemm> panel_;       // set when many rows run on weights packed by fusor
  bool single_thread_ = false;           // too small for a team: built and run on one thread
  int64_t live_rows_ = INT64_MAX;        // set_live_rows
};

// A kernel that runs `m` (constant weights) on input 0, adding input `residual` (-1: none)
// through its binary post-op, into output 0 (fused_matmul.cc).
std::unique_ptr<Kernel> make_epilogue_matmul_kernel(OnednnMatmul m, int residual, std::string name);

}  // namespace fusor::cpu
