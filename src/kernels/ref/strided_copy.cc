#include "kernels/ref/strided_copy.h"

#include <cstring>

namespace fusor::ref {
namespace {

// Copies `n` elements of `Size` bytes from a strided source to a dense destination.
template <size_t Size>
void copy_row(const std::byte* in, int64_t stride, std::byte* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * Size, in + i * stride * static_cast<int64_t>(Size), Size);
}

void copy_row_any(const std::byte* in, int64_t stride, std::byte* out, int64_t n, size_t size) {
  if (stride == 1) return (void)std::memcpy(out, in, static_cast<size_t>(n) * size);
  switch (size) {
    case 1: return copy_row<1>(in, stride, out, n);
    case 2: return copy_row<2>(in, stride, out, n);
    case 4: return copy_row<4>(in, stride, out, n);
    case 8: return copy_row<8>(in, stride, out, n);
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(out + static_cast<size_t>(i) * size, in + i * stride * static_cast<int64_t>(size), size);
  }
}

}  // namespace

void strided_copy(const std::byte* in, std::vector<int64_t> in_strides, std::byte* out, Dims out_dims,
                  size_t elem_size) {
  if (numel_of(out_dims) == 0) return;
  // Drop size-1 dims, then merge dim d into d+1 when stepping d equals stepping d+1 across its extent.
  Dims dims;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < out_dims.size(); ++d) {
    if (out_dims[d] == 1) continue;
    if (!dims.empty() && strides.back() == in_strides[d] * out_dims[d]) {
      dims.back() *= out_dims[d];
      strides.back() = in_strides[d];
      continue;
    }
    dims.push_back(out_dims[d]);
    strides.push_back(in_strides[d]);
  }
  if (dims.empty()) {
    std::memcpy(out, in, elem_size);
    return;
  }
  const size_t rank = dims.size();
  const int64_t row = dims.back();
  const int64_t row_stride = strides.back();
  const int64_t esize = static_cast<int64_t>(elem_size);
  std::vector<int64_t> idx(rank - 1, 0);
  int64_t offset = 0;  // element offset into `in` of the current row
  const int64_t rows = numel_of(dims) / row;
  for (int64_t r = 0; r < rows; ++r) {
    copy_row_any(in + offset * esize, row_stride, out + r * row * esize, row, elem_size);
    // Advance the outer index like an odometer, keeping `offset` in step.
    for (size_t d = rank - 1; d-- > 0;) {
      offset += strides[d];
      if (++idx[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

}  // namespace fusor::ref
