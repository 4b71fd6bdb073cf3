// Index values read from a tensor at run time (gathers and scatters): negative values count from
// the end, and anything else out of range is a one-line error naming the node, never a wild read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_util.h"

namespace fusor::ref {

inline int64_t wrap_index(const Node& node, int64_t i, int64_t extent, size_t axis) {
  if (i < -extent || i >= extent)
    fail(node, "index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) + " of size " +
                   std::to_string(extent),
         ErrorKind::InvalidArgument);  // the values fed, not the model
  return i < 0 ? i + extent : i;
}

// GatherElements and ScatterElements: the offset into data (in elements) that each element of
// `indices` (data's rank) addresses along `axis`, in the index tensor's row-major order. Every
// index is checked before any is used.
inline std::vector<int64_t> element_offsets(const Node& node, const Tensor& data, const Tensor& indices) {
  const size_t rank = data.rank();
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(rank), node));
  const auto strides = strides_of(data.dims());
  const Dims& idims = indices.dims();
  const auto values = indices.to_int64_vector();
  std::vector<int64_t> offsets(values.size());
  std::vector<int64_t> pos(rank, 0);
  int64_t base = 0;  // offset of `pos` without the axis term
  for (size_t k = 0; k < values.size(); ++k) {
    offsets[k] = base + wrap_index(node, values[k], data.dims()[axis], axis) * strides[axis];
    for (size_t d = rank; d-- > 0;) {
      const int64_t step = d == axis ? 0 : strides[d];
      base += step;
      if (++pos[d] < idims[d]) break;
      base -= step * idims[d];
      pos[d] = 0;
    }
  }
  return offsets;
}

}  // namespace fusor::ref
