// A 2-D oneDNN matmul run as row chunks on fusor's thread pool, each chunk by a single-threaded
// oneDNN primitive on the thread that takes it.
//
// Why: oneDNN (Debian's build) parallelizes with OpenMP, which splits a GEMM statically over a
// team. When the OS preempts one thread of the team (a noisy neighbour, a CPU quota, the
// server's network threads), the whole GEMM waits for it. Row chunks taken by whichever thread is
// free keep the GEMM going at the speed of the threads that run. The chunk primitives read the
// same packed weights as the full one (built with the full primitive's weights layout, else no
// split), so weights are packed once.
// Not column slices: a slice writes a strided window of dst, which oneDNN 2.6's brgemm declines,
// and the jit sgemm it falls back to ran MiniLM at half speed (measured). GEMMs with fewer than
// 128 rows stay on oneDNN's OpenMP threads.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace fusor::cpu {

class MatmulRowSplit {
 public:
  struct Shape {
    dnnl::memory::desc src, weights, bias, dst;  // the full GEMM; weights in the packed layout
    dnnl::post_ops post_ops;
    std::vector<dnnl::memory::desc> binary_mds;  // per binary post-op: [rows, n] or [1, n]
    std::vector<int> binary_indices;
  };
  // nullopt when the GEMM is too small to split for `threads`, or oneDNN would want another
  // weights layout for the chunks. `weights` and `bias` (null: none) are the memories the full
  // primitive reads; the chunks read the same ones, so the caller rebinds them for both.
  static std::optional<MatmulRowSplit> make(const Shape& shape, int threads, const dnnl::memory& weights,
                                            const dnnl::memory* bias);

  size_t scratch_bytes() const;  // for every participant
  // Runs every chunk on the pool. Not reentrant: one plan step runs one kernel at a time.
  void execute(const float* src, float* dst, std::span<const float* const> binary, std::span<std::byte> scratch);

 private:
  struct Part {  // the primitive for chunks of one row count (the last chunk may be shorter)
    int64_t rows = 0;
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };
  // A participant's memory objects for one part, bound once; a chunk only swaps data handles.
  struct Bound {
    dnnl::memory src, dst, scratch;
    std::vector<dnnl::memory> binary;
    std::vector<dnnl_exec_arg_t> args;
  };
  void bind(const dnnl::memory& weights, const dnnl::memory* bias);

  Shape shape_;
  int threads_ = 1;
  int64_t rows_ = 0, chunk_rows_ = 0, chunks_ = 0;
  std::shared_ptr<const Part> full_chunk_, last_chunk_;
  size_t scratch_per_thread_ = 0;
  std::vector<Bound> bound_;  // [participant * 2 + (last chunk ? 1 : 0)]
};

}  // namespace fusor::cpu
