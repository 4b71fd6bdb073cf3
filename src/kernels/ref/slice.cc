// Slice: a strided copy whose start offset and per-axis steps come from resolve_slice, the
// same resolution the shape function uses.
#include "ir/graph.h"
#include "ir/layout_params.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/strided_copy.h"

namespace fusor::ref {

void Slice(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const SliceSpec spec = resolve_slice_node(node, in.dims(), [&](size_t i) {
    return i < inputs.size() && inputs[i].defined() ? &inputs[i] : nullptr;
  });
  const auto in_strides = strides_of(in.dims());
  int64_t offset = 0;
  std::vector<int64_t> strides(in_strides.size());
  for (size_t d = 0; d < in_strides.size(); ++d) {
    offset += spec.start[d] * in_strides[d];
    strides[d] = spec.step[d] * in_strides[d];
  }
  const size_t esize = dtype_size(in.dtype());
  strided_copy(static_cast<const std::byte*>(in.raw()) + offset * static_cast<int64_t>(esize), strides,
               static_cast<std::byte*>(outputs[0].raw()), outputs[0].dims(), esize);
}

}  // namespace fusor::ref
