#include "kernels/cpu/matmul_row_split.h"

#include <algorithm>

#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;

// Every chunk reads all the weights, so a chunk of r rows does r/2 FLOP per weight byte. MiniLM's
// FFN GEMMs (weights over L2) at batch 1, length 128, profiled on 2 threads against one oneDNN
// call: 16-row chunks ~10% slower, 32-row ~8%, 64-row even. Smaller GEMMs keep oneDNN's threads.
constexpr int64_t kMinChunkRows = 64;
constexpr int64_t kChunksPerThread = 4;

size_t aligned64(size_t n) { return (n + 63) / 64 * 64; }

// `md` with its leading dim set to `rows` (strides kept), for row-wise operands; a broadcast
// ([1, n]) operand is returned as is.
memory::desc with_rows(const memory::desc& md, int64_t rows) {
  memory::dims dims = md.dims();
  if (dims[0] == 1) return md;
  dims[0] = rows;
  const auto& b = md.data.format_desc.blocking;
  return memory::desc(dims, md.data_type(), memory::dims(b.strides, b.strides + md.data.ndims));
}

bool row_wise(const memory::desc& md) { return md.dims()[0] != 1; }

}  // namespace

std::optional<MatmulRowSplit> MatmulRowSplit::make(const Shape& shape, int threads, const dnnl::memory& weights,
                                                   const dnnl::memory* bias) {
  if (threads <= 1 || shape.src.dims().size() != 2 || shape.dst.dims().size() != 2) return std::nullopt;
  if (shape.src.data.format_kind != dnnl_blocked || shape.dst.data.format_kind != dnnl_blocked) return std::nullopt;
  for (const auto& md : shape.binary_mds)
    if (md.dims().size() != 2 || md.data.format_kind != dnnl_blocked) return std::nullopt;
  const int64_t rows = shape.src.dims()[0];
  int64_t chunk = (rows + threads * kChunksPerThread - 1) / (threads * kChunksPerThread);
  chunk = std::max(kMinChunkRows, (chunk + 7) / 8 * 8);
  if (rows < 2 * chunk) return std::nullopt;

  MatmulRowSplit s;
  s.shape_ = shape;
  s.threads_ = threads;
  s.rows_ = rows;
  s.chunk_rows_ = chunk;
  s.chunks_ = (rows + chunk - 1) / chunk;
  // Built single-threaded: oneDNN fixes a primitive's thread count when it is created.
  const onednn::OmpThreads one(1);
  auto part = [&](int64_t r) -> std::shared_ptr<const Part> {
    std::string key = "matmul-rows|" + onednn::dims_key({r}) + "|" + onednn::md_key(shape.src) + "|" +
                      onednn::md_key(shape.dst) + "|" + onednn::md_key(shape.weights) + "|" + onednn::md_key(shape.bias);
    for (const auto& md : shape.binary_mds) key += "|" + onednn::md_key(md);
    key += "|" + std::to_string(shape.post_ops.len());
    for (int i = 0; i < shape.post_ops.len(); ++i) key += "," + std::to_string(static_cast<int>(shape.post_ops.kind(i)));
    return onednn::cached_as<Part>(key, [&] {
      dnnl::post_ops po;  // the same chain with the row-wise binary operands cut to r rows
      size_t b = 0;
      for (int i = 0; i < shape.post_ops.len(); ++i) {
        if (b < shape.binary_indices.size() && shape.binary_indices[b] == i) {
          dnnl::algorithm alg;
          memory::desc src1;
          shape.post_ops.get_params_binary(i, alg, src1);
          po.append_binary(alg, with_rows(shape.binary_mds[b], r));
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
      const memory::desc src = with_rows(shape.src, r), dst = with_rows(shape.dst, r);
      auto desc = shape.bias.is_zero() ? dnnl::matmul::desc(src, shape.weights, dst)
                                       : dnnl::matmul::desc(src, shape.weights, shape.bias, dst);
      auto p = std::make_shared<Part>();
      p->rows = r;
      p->pd = dnnl::matmul::primitive_desc(desc, attr, onednn::engine());
      p->prim = dnnl::matmul(p->pd);
      return p;
    });
  };
  try {
    s.full_chunk_ = part(chunk);
    const int64_t last = rows - (s.chunks_ - 1) * chunk;
    s.last_chunk_ = last == chunk ? s.full_chunk_ : part(last);
  } catch (const dnnl::error&) {
    return std::nullopt;  // e.g. no implementation takes these weights in this layout
  }
  if (s.full_chunk_->pd.weights_desc() != shape.weights || s.last_chunk_->pd.weights_desc() != shape.weights)
    return std::nullopt;
  s.scratch_per_thread_ = aligned64(std::max(s.full_chunk_->pd.scratchpad_desc().get_size(),
                                             s.last_chunk_->pd.scratchpad_desc().get_size()));
  s.bind(weights, bias);
  return s;
}

void MatmulRowSplit::bind(const dnnl::memory& weights, const dnnl::memory* bias) {
  auto& eng = onednn::engine();
  for (int p = 0; p < threads_; ++p)
    for (const Part* part : {full_chunk_.get(), last_chunk_.get()}) {
      Bound b;
      b.src = memory(part->pd.src_desc(), eng, DNNL_MEMORY_NONE);
      b.dst = memory(part->pd.dst_desc(), eng, DNNL_MEMORY_NONE);
      b.scratch = memory(part->pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, b.src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, b.dst}, {DNNL_ARG_SCRATCHPAD, b.scratch}};
      if (bias) args.emplace(DNNL_ARG_BIAS, *bias);
      for (size_t i = 0; i < shape_.binary_mds.size(); ++i) {
        b.binary.push_back(memory(with_rows(shape_.binary_mds[i], part->rows), eng, DNNL_MEMORY_NONE));
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(shape_.binary_indices[i]) | DNNL_ARG_SRC_1, b.binary.back());
      }
      b.args = onednn::arg_list(args);  // the map's memories live on in b and in the caller
      bound_.push_back(std::move(b));
    }
}

size_t MatmulRowSplit::scratch_bytes() const { return scratch_per_thread_ * static_cast<size_t>(threads_); }

void MatmulRowSplit::execute(const float* src, float* dst, std::span<const float* const> binary,
                             std::span<std::byte> scratch) {
  const int64_t src_stride = shape_.src.data.format_desc.blocking.strides[0];
  const int64_t dst_stride = shape_.dst.data.format_desc.blocking.strides[0];
  parallel_chunks(chunks_, threads_, [&](int64_t c, int p) {
    const bool last = c == chunks_ - 1;
    const Part& part = last ? *last_chunk_ : *full_chunk_;
    Bound& b = bound_[static_cast<size_t>(p) * 2 + (last ? 1 : 0)];
    const int64_t r0 = c * chunk_rows_;
    b.src.set_data_handle(const_cast<float*>(src + r0 * src_stride));
    b.dst.set_data_handle(dst + r0 * dst_stride);
    b.scratch.set_data_handle(scratch.data() + scratch_per_thread_ * static_cast<size_t>(p));
    for (size_t i = 0; i < b.binary.size(); ++i) {
      const memory::desc& md = shape_.binary_mds[i];
      const int64_t offset = row_wise(md) ? r0 * md.data.format_desc.blocking.strides[0] : 0;
      b.binary[i].set_data_handle(const_cast<float*>(binary[i] + offset));
    }
    onednn::execute(part.prim, b.args);
    onednn::stream().wait();
  });
}

}  // namespace fusor::cpu
