// Reference NonZero, Unique and Compress: they copy what ir/value_selection.h selects. Outputs
// arrive sized by the shape function from the same values; a mismatch (a kernel run on other
// values than it was planned for) fails instead of writing out of bounds.
#include <cstring>
#include <optional>

#include "ir/shape_util.h"
#include "ir/value_selection.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

void expect_dims(const Node& node, const Tensor& out, const Dims& want) {
  if (out.dims() != want)
    fail(node, "output planned as " + dims_to_string(out.dims()) + " but the input values give " + dims_to_string(want));
}

// Copies slices `picks` of x viewed as [outer, n, inner] into out [outer, picks, inner].
void copy_slices(const Tensor& x, int64_t outer, int64_t n, int64_t inner, const std::vector<int64_t>& picks,
                 Tensor& out) {
  const size_t slice = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p : picks) {
      std::memcpy(dst, src + static_cast<size_t>(o * n + p) * slice, slice);
      dst += slice;
    }
}

// [outer, n, inner] around `axis`, or [1, numel, 1] without one.
void split_at(const Dims& d, std::optional<int64_t> axis, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1, n = numel_of(d), inner = 1;
  if (!axis) return;
  n = d[static_cast<size_t>(*axis)];
  for (int64_t i = 0; i < *axis; ++i) outer *= d[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(*axis) + 1; i < d.size(); ++i) inner *= d[i];
}

std::optional<int64_t> axis_of(const Node& node, const Tensor& x) {
  if (!node.has_attr("axis")) return std::nullopt;
  return normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(x.rank()), node);
}

void write_ints(const std::vector<int64_t>& v, std::span<Tensor> outputs, size_t i) {
  if (i < outputs.size() && outputs[i].defined() && !v.empty())
    std::memcpy(outputs[i].raw(), v.data(), v.size() * sizeof(int64_t));
}

}  // namespace

void NonZero(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const std::vector<int64_t> positions = nonzero_positions(x, node);
  const auto count = static_cast<int64_t>(positions.size());
  const Dims& d = x.dims();
  const auto rank = static_cast<int64_t>(d.size());
  expect_dims(node, outputs[0], {std::max<int64_t>(rank, 1), count});
  int64_t* out = outputs[0].data<int64_t>();
  if (rank == 0) {
    for (int64_t c = 0; c < count; ++c) out[c] = 0;
    return;
  }
  for (int64_t c = 0; c < count; ++c) {
    int64_t rest = positions[static_cast<size_t>(c)];
    for (int64_t k = rank - 1; k >= 0; --k) {
      out[k * count + c] = rest % d[static_cast<size_t>(k)];
      rest /= d[static_cast<size_t>(k)];
    }
  }
}

void Unique(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const std::optional<int64_t> axis = axis_of(node, x);
  const UniqueGroups g = unique_groups(x, axis, node.attr_int("sorted", 1) != 0, node);
  int64_t outer, n, inner;
  split_at(x.dims(), axis, outer, n, inner);
  const auto unique = static_cast<int64_t>(g.first.size());
  Dims y = {unique};
  if (axis) {
    y = x.dims();
    y[static_cast<size_t>(*axis)] = unique;
  }
  expect_dims(node, outputs[0], y);
  copy_slices(x, outer, n, inner, g.first, outputs[0]);
  write_ints(g.first, outputs, 1);
  write_ints(g.inverse, outputs, 2);
  write_ints(g.counts, outputs, 3);
}

void Compress(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const std::optional<int64_t> axis = axis_of(node, x);
  int64_t outer, n, inner;
  split_at(x.dims(), axis, outer, n, inner);
  const std::vector<int64_t> kept = compress_positions(inputs[1], n, node);
  Dims want = {static_cast<int64_t>(kept.size())};
  if (axis) {
    want = x.dims();
    want[static_cast<size_t>(*axis)] = static_cast<int64_t>(kept.size());
  }
  expect_dims(node, outputs[0], want);
  copy_slices(x, outer, n, inner, kept, outputs[0]);
}

}  // namespace fusor::ref
