// A 2-D oneDNN matmul run as tiles on fusor's thread pool, each tile by a single-threaded oneDNN
// primitive on the thread that takes it.
//
// Why: oneDNN (Debian's build) parallelizes with OpenMP, which splits a GEMM statically over a
// team. When the OS preempts one thread of the team (a noisy neighbour, a CPU quota, the
// server's network threads), the whole GEMM waits for it. Tiles taken by whichever thread is
// free keep the GEMM going at the speed of the threads that run. The tile primitives read the
// same packed weights as the full one (built with the full primitive's weights layout, else no
// split), so weights are packed once.
//
// Tiles are row chunks by column blocks. Every row chunk reads the whole weights, so where the
// weights are plain (oneDNN's jit sgemm on AVX2 takes them transposed: each column's K weights
// contiguous) a GEMM is cut into column blocks as well, and each tile takes up to 512 rows.
// Llama-tiny's 512 x 2752 gate/up projection at 128 rows, on an AVX2 host with an 8 MiB L3:
// two 64-row chunks 58 GFLOP/s, column blocks 63-64, one oneDNN call on 2 threads 64.
// Packed (blocked) weights, as brgemm's on AVX-512, are cut by rows only: oneDNN 2.6's brgemm
// declines a strided dst window, and the jit sgemm it falls back to ran MiniLM at half speed.
// Each tile runs with OpenMP's thread count at 1 on its thread: oneDNN's gemm reads it when it
// runs, and the calling thread's count is its width, so its tile opened a team of its own beside
// the pool's threads (MiniLM at length 128 ran 1.2-1.4x slower on AVX2).
// So with plain weights any GEMM of 2 rows or more that is not a GEMV (packed_gemv.h) runs on
// the pool: 16 decode rows of llama-tiny with one core busy ran 1.7x faster than on oneDNN's
// team, and the same when quiet. With blocked weights a GEMM needs 128 rows for two chunks.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace fusor::cpu {

class MatmulTileSplit {
 public:
  struct Shape {
    dnnl::memory::desc src, weights, bias, dst;  // the full GEMM; weights in the packed layout
    dnnl::post_ops post_ops;
    std::vector<dnnl::memory::desc> binary_mds;  // per binary post-op: [rows, n], [1, n] or [rows, 1]
    std::vector<int> binary_indices;
  };
  // nullopt when the GEMM is too small to split for `threads`, or oneDNN would want another
  // weights layout for the tiles.
  static std::optional<MatmulTileSplit> make(const Shape& shape, int threads);

  size_t scratch_bytes() const;  // for every participant
  // Runs every tile on the pool; `bias` is null when the GEMM has none. Not reentrant: one plan
  // step runs one kernel at a time.
  void execute(const float* src, const float* weights, const float* bias, float* dst,
               std::span<const float* const> binary, std::span<std::byte> scratch);

 private:
  struct Part {  // the primitive for tiles of one size (the last row chunk / column block may be smaller)
    int64_t rows = 0, cols = 0;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };
  // A participant's memory objects for one part, bound once; a tile only swaps data handles.
  struct Bound {
    dnnl::memory src, weights, bias, dst, scratch;
    std::vector<dnnl::memory> binary;
    std::vector<dnnl_exec_arg_t> args;
  };
  std::shared_ptr<const Part> part(int64_t rows, int64_t cols) const;
  void bind();
  int part_index(int64_t row_chunk, int64_t col_block) const;

  Shape shape_;
  int threads_ = 1;
  int64_t tile_rows_ = 0, tile_cols_ = 0, row_chunks_ = 0, col_blocks_ = 0;
  std::shared_ptr<const Part> parts_[4];  // [last row chunk ? 2 : 0 + last column block ? 1 : 0]
  size_t scratch_per_thread_ = 0;
  std::vector<Bound> bound_;  // [participant * 4 + part index]
};

}  // namespace fusor::cpu
