// GatherElements and GatherND: gathers whose index tensors address single elements (one index
// per output element, along one axis) or whole slices (a tuple of leading indices per slice).
// Dtype-generic: elements move as bytes. Index values are checked (kernels/ref/index_wrap.h).
#include <cstring>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/index_wrap.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void GatherElements(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const auto offsets = element_offsets(node, data, inputs[1]);
  const size_t esize = dtype_size(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(outputs[0].raw());
  for (size_t k = 0; k < offsets.size(); ++k)
    std::memcpy(dst + k * esize, src + static_cast<size_t>(offsets[k]) * esize, esize);
}

// Data viewed as [batch, d_b .. d_{r-1}], indices as [batch, n, k]: each k-tuple picks the
// slice data[batch][i_0]..[i_{k-1}], of prod(d_{b+k} ..) elements.
void GatherND(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const Dims& dd = data.dims();
  const Dims& idims = inputs[1].dims();
  const auto indices = inputs[1].to_int64_vector();
  const auto b = static_cast<size_t>(node.attr_int("batch_dims", 0));
  const auto k = static_cast<size_t>(idims.back());
  int64_t batches = 1, slice = 1, block = 1;
  for (size_t d = 0; d < b; ++d) batches *= dd[d];
  for (size_t d = b + k; d < dd.size(); ++d) slice *= dd[d];
  for (size_t d = b; d < dd.size(); ++d) block *= dd[d];
  const auto strides = strides_of(Dims(dd.begin() + static_cast<long>(b), dd.end()));
  const int64_t tuples = batches ? static_cast<int64_t>(indices.size() / k) / batches : 0;
  const size_t esize = dtype_size(data.dtype());
  const size_t slice_bytes = static_cast<size_t>(slice) * esize;
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(outputs[0].raw());
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t n = 0; n < tuples; ++n) {
      const int64_t* tuple = indices.data() + (bi * tuples + n) * static_cast<int64_t>(k);
      int64_t off = bi * block;
      for (size_t j = 0; j < k; ++j) off += wrap_index(node, tuple[j], dd[b + j], b + j) * strides[j];
      if (slice_bytes) std::memcpy(dst, src + static_cast<size_t>(off) * esize, slice_bytes);
      dst += slice_bytes;
    }
}

}  // namespace fusor::ref
