// ReverseSequence: for each batch entry b, the first sequence_lens[b] steps along the time axis
// are reversed and the rest copied. Batch and time are axes 0 and 1 (in either order), so each
// (batch, time) pair owns one contiguous block of the remaining axes. Dtype-generic.
#include <algorithm>
#include <cstring>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void ReverseSequence(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const bool batch_first = node.attr_int("batch_axis", 1) == 0;
  const int64_t batches = in.dims()[batch_first ? 0 : 1], steps = in.dims()[batch_first ? 1 : 0];
  const auto lens = inputs[1].to_int64_vector();
  for (int64_t len : lens)
    if (len < 0 || len > steps)
      fail(node, "sequence length " + std::to_string(len) + " is out of range [0, " + std::to_string(steps) + "]",
           ErrorKind::InvalidArgument);
  const size_t block = static_cast<size_t>(in.numel() / std::max<int64_t>(batches * steps, 1)) * dtype_size(in.dtype());
  auto at = [&](int64_t b, int64_t t) { return static_cast<size_t>(batch_first ? b * steps + t : t * batches + b) * block; };
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(outputs[0].raw());
  if (block == 0) return;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    for (int64_t t = 0; t < steps; ++t) std::memcpy(dst + at(b, t), src + at(b, t < len ? len - 1 - t : t), block);
  }
}

}  // namespace fusor::ref
