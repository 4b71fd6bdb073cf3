// Reference OneHot: out[..., d, ...] (d at `axis`) is values[1] where the index equals d and
// values[0] elsewhere. Indices of any numeric type are truncated to integers; a negative index
// counts from the end of depth; one outside [-depth, depth) gives an all-off row, as the spec says.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

std::vector<int64_t> indices_as_int64(const Node& node, const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        // Out-of-range or NaN floats map to an index no row matches.
        double v = static_cast<double>(p[i]);
        out[i] = v == v && v > -9e18 && v < 9e18 ? static_cast<int64_t>(v) : INT64_MIN;
      } else if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) {
        out[i] = p[i] > static_cast<uint64_t>(INT64_MAX) ? INT64_MIN : static_cast<int64_t>(p[i]);
      } else {
        out[i] = static_cast<int64_t>(p[i]);
      }
    }
  });
  return out;
}

}  // namespace

void OneHot(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& values = inputs[2];
  Tensor& y = outputs[0];
  std::vector<int64_t> idx = indices_as_int64(node, inputs[0]);
  int64_t out_rank = static_cast<int64_t>(y.rank());
  int64_t axis = normalize_axis(node.attr_int("axis", -1), out_rank, node);
  int64_t depth = y.dims()[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= y.dims()[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < out_rank; ++i) inner *= y.dims()[static_cast<size_t>(i)];
  size_t es = dtype_size(values.dtype());
  const auto* off = static_cast<const std::byte*>(values.raw());
  const std::byte* on = off + es;
  auto* out = static_cast<std::byte*>(y.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t hot = idx[static_cast<size_t>(o * inner + i)];
      if (hot < 0 && hot >= -depth) hot += depth;
      for (int64_t dpos = 0; dpos < depth; ++dpos) {
        int64_t at = (o * depth + dpos) * inner + i;
        std::memcpy(out + static_cast<size_t>(at) * es, dpos == hot ? on : off, es);
      }
    }
  }
}

}  // namespace fusor::ref
