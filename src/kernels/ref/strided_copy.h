// Gathers a strided view of one buffer into a dense row-major buffer. Transpose (permuted
// strides) and Slice (offset plus scaled, possibly negative strides) are both this one copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fusor/tensor.h"

namespace fusor::ref {

// For every index idx of `out_dims` in row-major order, copies the element at
// `in + sum_d idx[d] * in_strides[d] * elem_size` to the next slot of `out`.
// Adjacent dims that are contiguous in the input are merged so rows copy with memcpy.
void strided_copy(const std::byte* in, std::vector<int64_t> in_strides, std::byte* out, Dims out_dims,
                  size_t elem_size);

}  // namespace fusor::ref
