// Reference kernels of the ops that move bytes without looking at them: Transpose, the
// metadata-only reshapes (Reshape, Flatten, Squeeze, Unsqueeze), Concat, Split and Trilu.
// All are dtype-generic: they copy by element size.
#include <algorithm>
#include <cstring>

#include "ir/graph.h"
#include "ir/layout_params.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/strided_copy.h"

namespace fusor::ref {
namespace {

const std::byte* bytes(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes(Tensor& t) { return static_cast<std::byte*>(t.raw()); }

// Reshape-like ops: the output has the input's bytes under new dims.
void copy_all(const Tensor& in, Tensor& out) {
  if (in.raw() != out.raw() && in.nbytes()) std::memcpy(out.raw(), in.raw(), in.nbytes());
}

int64_t product(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

}  // namespace

void Transpose(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const int64_t rank = static_cast<int64_t>(in.rank());
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm"))
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  const auto in_strides = strides_of(in.dims());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    strides[i] = in_strides[static_cast<size_t>(normalize_axis(perm[i], rank, node))];
  strided_copy(bytes(in), strides, bytes(outputs[0]), outputs[0].dims(), dtype_size(in.dtype()));
}

void Reshape(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_all(inputs[0], outputs[0]);
}
void Flatten(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_all(inputs[0], outputs[0]);
}
void Squeeze(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_all(inputs[0], outputs[0]);
}
void Unsqueeze(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  copy_all(inputs[0], outputs[0]);
}

// Viewed as [outer, axis * inner], each input contributes one contiguous block per outer row.
void Concat(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(out.rank()), node));
  const int64_t outer = product(out.dims(), 0, axis);
  const size_t esize = dtype_size(out.dtype());
  const size_t out_row = static_cast<size_t>(product(out.dims(), axis, out.rank())) * esize;
  size_t col = 0;  // byte offset of the current input's block within an output row
  for (const Tensor& in : inputs) {
    const size_t in_row = static_cast<size_t>(product(in.dims(), axis, in.rank())) * esize;
    if (in_row)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(bytes(out) + o * out_row + col, bytes(in) + o * in_row, in_row);
    col += in_row;
  }
}

void Split(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const auto axis = static_cast<size_t>(normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(in.rank()), node));
  std::vector<int64_t> split;
  // As the shape function reads them: an input from opset 13 (and in opset 1), else the attribute.
  const bool from_input = split_sizes_from_input(node, inputs.size() > 1 && inputs[1].defined());
  const bool has_split = from_input || (node.opset < 13 && node.has_attr("split"));
  if (from_input) split = split_sizes_of(node, inputs[1]);
  else if (has_split) split = node.attr_ints("split");
  const auto sizes = resolve_split(node, in.dims()[axis], has_split ? &split : nullptr, outputs.size());
  const int64_t outer = product(in.dims(), 0, axis);
  const size_t esize = dtype_size(in.dtype());
  const size_t inner = static_cast<size_t>(product(in.dims(), axis + 1, in.rank())) * esize;
  const size_t in_row = static_cast<size_t>(in.dims()[axis]) * inner;
  size_t col = 0;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const size_t out_row = static_cast<size_t>(sizes[k]) * inner;
    if (outputs[k].defined() && out_row)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(bytes(outputs[k]) + o * out_row, bytes(in) + o * in_row + col, out_row);
    col += out_row;
  }
}

// Copies the input, then zeroes the excluded triangle row by row (zero bytes are 0 in every dtype).
void Trilu(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  Tensor& out = outputs[0];
  copy_all(in, out);
  const int64_t k = inputs.size() > 1 && inputs[1].defined() ? inputs[1].to_int64_vector().at(0) : 0;
  const bool upper = node.attr_int("upper", 1) != 0;
  const int64_t rows = in.dim(-2), cols = in.dim(-1);
  const int64_t mats = rows > 0 && cols > 0 ? in.numel() / (rows * cols) : 0;
  const size_t esize = dtype_size(in.dtype());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      std::byte* row = bytes(out) + static_cast<size_t>((m * rows + i) * cols) * esize;
      // Upper keeps j >= i + k, so zero [0, i + k). Lower keeps j <= i + k, so zero (i + k, cols).
      const int64_t edge = i + k;
      int64_t zb = upper ? 0 : std::max<int64_t>(edge + 1, 0);
      int64_t ze = upper ? std::min<int64_t>(edge, cols) : cols;
      zb = std::min(zb, cols);
      if (ze > zb) std::memset(row + zb * static_cast<int64_t>(esize), 0, static_cast<size_t>(ze - zb) * esize);
    }
}

}  // namespace fusor::ref
