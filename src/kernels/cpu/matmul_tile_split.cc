#include "kernels/cpu/matmul_tile_split.h"

#include <algorithm>
#include <string>

#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;

// Every row chunk reads all the weights, so a chunk of r rows does r/2 FLOP per weight byte.
// MiniLM's FFN GEMMs (weights over L2) at batch 1, length 128, profiled on 2 threads against one
// oneDNN call: 16-row chunks ~10% slower, 32-row ~8%, 64-row even.
constexpr int64_t kMinChunkRows = 64;
constexpr int64_t kChunksPerThread = 4;
// Column blocks (plain weights only) take every row up to this many: fewer, larger tiles ran
// 1024-row GEMMs (MiniLM's at batch 8) 7-9% faster than 256-row ones: each tile's sgemm packs
// its operands.
constexpr int64_t kMaxBlockRows = 512;
constexpr int64_t kMinBlockCols = 64;

size_t aligned64(size_t n) { return (n + 63) / 64 * 64; }

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// `md` ([rows, cols], strides kept) cut to `rows` x `cols`; a broadcast dim (1) stays 1, and an
// uncut desc is returned as it is (packed weights keep their blocked layout).
memory::desc tile_of(const memory::desc& md, int64_t rows, int64_t cols) {
  memory::dims dims = md.dims();
  if (dims[0] != 1) dims[0] = rows;
  if (dims[1] != 1) dims[1] = cols;
  if (dims == md.dims()) return md;
  const auto& b = md.data.format_desc.blocking;
  return memory::desc(dims, md.data_type(), memory::dims(b.strides, b.strides + md.data.ndims));
}

// The element offset of tile (r0, c0) in `md`; broadcast dims do not move.
int64_t offset_of(const memory::desc& md, int64_t r0, int64_t c0) {
  const auto& b = md.data.format_desc.blocking;
  return (md.dims()[0] != 1 ? r0 * b.strides[0] : 0) + (md.dims()[1] != 1 ? c0 * b.strides[1] : 0);
}

bool plain_2d(const memory::desc& md) {
  return md.dims().size() == 2 && md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks == 0;
}

}  // namespace

std::optional<MatmulTileSplit> MatmulTileSplit::make(const Shape& shape, int threads) {
  if (threads <= 1 || !plain_2d(shape.src) || !plain_2d(shape.dst)) return std::nullopt;
  for (const auto& md : shape.binary_mds)
    if (!plain_2d(md)) return std::nullopt;
  const int64_t rows = shape.src.dims()[0], cols = shape.dst.dims()[1];
  if (rows < 2) return std::nullopt;
  const int64_t chunks = threads * kChunksPerThread;
  int64_t tile_rows = rows, tile_cols = cols;
  if (plain_2d(shape.weights) && (shape.bias.is_zero() || plain_2d(shape.bias))) {
    tile_rows = std::min(rows, kMaxBlockRows);
    const int64_t row_chunks = (rows + tile_rows - 1) / tile_rows;
    const int64_t blocks = std::max<int64_t>(1, (chunks + row_chunks - 1) / row_chunks);
    tile_cols = std::max(kMinBlockCols, round_up((cols + blocks - 1) / blocks, 16));
  } else {
    tile_rows = std::max(kMinChunkRows, round_up((rows + chunks - 1) / chunks, 8));
  }
  tile_rows = std::min(tile_rows, rows);
  tile_cols = std::min(tile_cols, cols);
  const int64_t row_chunks = (rows + tile_rows - 1) / tile_rows, col_blocks = (cols + tile_cols - 1) / tile_cols;
  if (row_chunks * col_blocks < 2) return std::nullopt;

  MatmulTileSplit s;
  s.shape_ = shape;
  s.threads_ = threads;
  s.tile_rows_ = tile_rows;
  s.tile_cols_ = tile_cols;
  s.row_chunks_ = row_chunks;
  s.col_blocks_ = col_blocks;
  const int64_t last_rows = rows - (row_chunks - 1) * tile_rows, last_cols = cols - (col_blocks - 1) * tile_cols;
  try {
    for (int i = 0; i < 4; ++i) s.parts_[i] = s.part(i & 2 ? last_rows : tile_rows, i & 1 ? last_cols : tile_cols);
  } catch (const dnnl::error&) {
    return std::nullopt;  // e.g. no implementation takes these weights in this layout
  }
  for (const auto& p : s.parts_) {
    if (p->pd.weights_desc() != tile_of(shape.weights, shape.weights.dims()[0], p->cols)) return std::nullopt;
    s.scratch_per_thread_ = std::max(s.scratch_per_thread_, aligned64(p->pd.scratchpad_desc().get_size()));
  }
  s.bind();
  return s;
}

std::shared_ptr<const MatmulTileSplit::Part> MatmulTileSplit::part(int64_t rows, int64_t cols) const {
  const Shape& shape = shape_;
  std::string key = "matmul-tile|" + onednn::dims_key({rows, cols}) + "|" + onednn::md_key(shape.src) + "|" +
                    onednn::md_key(shape.dst) + "|" + onednn::md_key(shape.weights) + "|" + onednn::md_key(shape.bias);
  key += "|" + onednn::post_ops_key(shape.post_ops);  // binary operands' layouts included
  // Built single-threaded: oneDNN fixes a primitive's thread count when it is created.
  const onednn::OmpThreads one(1);
  return onednn::cached_as<Part>(key, [&] {
    dnnl::post_ops po;  // the same chain with the binary operands cut to the tile
    size_t b = 0;
    for (int i = 0; i < shape.post_ops.len(); ++i) {
      if (b < shape.binary_indices.size() && shape.binary_indices[b] == i) {
        dnnl::algorithm alg;
        memory::desc src1;
        shape.post_ops.get_params_binary(i, alg, src1);
        po.append_binary(alg, tile_of(shape.binary_mds[b], rows, cols));
        ++b;
      } else {
        float scale, alpha, beta;
        dnnl::algorithm alg;
        shape.post_ops.get_params_eltwise(i, scale, alg, alpha, beta);
        po.append_eltwise(scale, alg, alpha, beta);
      }
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::desc src = tile_of(shape.src, rows, shape.src.dims()[1]), dst = tile_of(shape.dst, rows, cols);
    const memory::desc weights = tile_of(shape.weights, shape.weights.dims()[0], cols);
    auto desc = shape.bias.is_zero() ? dnnl::matmul::desc(src, weights, dst)
                                     : dnnl::matmul::desc(src, weights, tile_of(shape.bias, 1, cols), dst);
    auto p = std::make_shared<Part>();
    p->rows = rows;
    p->cols = cols;
    p->pd = dnnl::matmul::primitive_desc(desc, attr, onednn::engine());
    p->prim = dnnl::matmul(p->pd);
    return p;
  });
}

void MatmulTileSplit::bind() {
  auto& eng = onednn::engine();
  for (int t = 0; t < threads_; ++t)
    for (const auto& part : parts_) {
      Bound b;
      b.src = memory(part->pd.src_desc(), eng, DNNL_MEMORY_NONE);
      b.weights = memory(part->pd.weights_desc(), eng, DNNL_MEMORY_NONE);
      b.dst = memory(part->pd.dst_desc(), eng, DNNL_MEMORY_NONE);
      b.scratch = memory(part->pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, b.src}, {DNNL_ARG_WEIGHTS, b.weights}, {DNNL_ARG_DST, b.dst}, {DNNL_ARG_SCRATCHPAD, b.scratch}};
      if (!shape_.bias.is_zero()) {
        b.bias = memory(part->pd.bias_desc(), eng, DNNL_MEMORY_NONE);
        args.emplace(DNNL_ARG_BIAS, b.bias);
      }
      for (size_t i = 0; i < shape_.binary_mds.size(); ++i) {
        b.binary.push_back(memory(tile_of(shape_.binary_mds[i], part->rows, part->cols), eng, DNNL_MEMORY_NONE));
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(shape_.binary_indices[i]) | DNNL_ARG_SRC_1, b.binary.back());
      }
      b.args = onednn::arg_list(args);  // the map's memories live on in b
      bound_.push_back(std::move(b));
    }
}

int MatmulTileSplit::part_index(int64_t row_chunk, int64_t col_block) const {
  return (row_chunk == row_chunks_ - 1 ? 2 : 0) + (col_block == col_blocks_ - 1 ? 1 : 0);
}

size_t MatmulTileSplit::scratch_bytes() const { return scratch_per_thread_ * static_cast<size_t>(threads_); }

void MatmulTileSplit::execute(const float* src, const float* weights, const float* bias, float* dst,
                              std::span<const float* const> binary, std::span<std::byte> scratch) {
  // Column-major over tiles: consecutive tiles share a weights block (one row chunk after another).
  parallel_chunks(row_chunks_ * col_blocks_, threads_, [&](int64_t t, int p) {
    const onednn::OmpThreads one(1);  // else oneDNN's gemm opens a team of the caller's width
    const int64_t rc = t % row_chunks_, cb = t / row_chunks_;
    const int64_t r0 = rc * tile_rows_, c0 = cb * tile_cols_;
    const int idx = part_index(rc, cb);
    const Part& part = *parts_[idx];
    Bound& b = bound_[static_cast<size_t>(p) * 4 + static_cast<size_t>(idx)];
    b.src.set_data_handle(const_cast<float*>(src + offset_of(shape_.src, r0, 0)));
    b.weights.set_data_handle(const_cast<float*>(weights + offset_of(shape_.weights, 0, c0)));
    b.dst.set_data_handle(dst + offset_of(shape_.dst, r0, c0));
    if (bias) b.bias.set_data_handle(const_cast<float*>(bias + offset_of(shape_.bias, 0, c0)));
    b.scratch.set_data_handle(scratch.data() + scratch_per_thread_ * static_cast<size_t>(p));
    for (size_t i = 0; i < b.binary.size(); ++i)
      b.binary[i].set_data_handle(const_cast<float*>(binary[i] + offset_of(shape_.binary_mds[i], r0, c0)));
    onednn::execute(part.prim, b.args);
    onednn::stream().wait();
  });
}

}  // namespace fusor::cpu
