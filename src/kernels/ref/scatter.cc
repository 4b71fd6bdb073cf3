// ScatterElements (and its opset 9-10 name Scatter) and ScatterND: the output is a copy of
// the data with the updates written, or combined by `reduction` (add, mul, max, min), at
// the places the indices name. Duplicate indices apply in order. Index values are checked
// (kernels/ref/index_wrap.h).
#include <algorithm>
#include <cstring>
#include <functional>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/index_wrap.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const Node& node) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  if (r == "none") return Reduction::None;
  fail(node, "unknown reduction '" + r + "'");
}

// Applies `count` elements of `upd` onto `dst` (both of the output's dtype).
using Combine = std::function<void(std::byte* dst, const std::byte* upd, size_t count)>;

Combine combiner(const Node& node, DType t) {
  const Reduction r = reduction_of(node);
  const size_t esize = dtype_size(t);
  if (r == Reduction::None) return [esize](std::byte* d, const std::byte* u, size_t n) { std::memcpy(d, u, n * esize); };
  Combine out;
  visit_dtype(t, node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    out = [r](std::byte* d, const std::byte* u, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        T a, b;
        std::memcpy(&a, d + i * sizeof(T), sizeof(T));
        std::memcpy(&b, u + i * sizeof(T), sizeof(T));
        switch (r) {
          case Reduction::Add: a = static_cast<T>(a + b); break;
          case Reduction::Mul: a = static_cast<T>(a * b); break;
          case Reduction::Max: a = std::max(a, b); break;
          case Reduction::Min: a = std::min(a, b); break;
          case Reduction::None: a = b; break;
        }
        std::memcpy(d + i * sizeof(T), &a, sizeof(T));
      }
    };
  });
  return out;
}

void copy_data(const Tensor& data, Tensor& out) {
  if (data.raw() != out.raw() && data.nbytes()) std::memcpy(out.raw(), data.raw(), data.nbytes());
}

void scatter_elements(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  Tensor& out = outputs[0];
  const Combine combine = combiner(node, data.dtype());
  // Every index is checked before writing, so a bad one leaves no half-written output behind.
  const auto offsets = element_offsets(node, data, inputs[1]);
  const size_t esize = dtype_size(data.dtype());
  copy_data(data, out);
  const auto* upd = static_cast<const std::byte*>(inputs[2].raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (size_t k = 0; k < offsets.size(); ++k)
    combine(dst + static_cast<size_t>(offsets[k]) * esize, upd + k * esize, 1);
}

}  // namespace

void ScatterElements(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  scatter_elements(node, inputs, outputs);
}
void Scatter(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  scatter_elements(node, inputs, outputs);
}

// Indices [n, k]: each k-tuple names the slice out[i_0]..[i_{k-1}], of prod(d_k ..) elements,
// that the n-th slice of the updates is written to.
void ScatterND(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& data = inputs[0];
  const Dims& dd = data.dims();
  const auto indices = inputs[1].to_int64_vector();
  const auto k = static_cast<size_t>(inputs[1].dims().back());
  int64_t slice = 1;
  for (size_t d = k; d < dd.size(); ++d) slice *= dd[d];
  const auto strides = strides_of(dd);
  const size_t tuples = indices.size() / k;
  std::vector<int64_t> offsets(tuples, 0);
  for (size_t n = 0; n < tuples; ++n)
    for (size_t j = 0; j < k; ++j) offsets[n] += wrap_index(node, indices[n * k + j], dd[j], j) * strides[j];
  const Combine combine = combiner(node, data.dtype());
  copy_data(data, outputs[0]);
  const size_t esize = dtype_size(data.dtype());
  const auto* upd = static_cast<const std::byte*>(inputs[2].raw());
  auto* dst = static_cast<std::byte*>(outputs[0].raw());
  for (size_t n = 0; n < tuples; ++n)
    combine(dst + static_cast<size_t>(offsets[n]) * esize, upd + n * static_cast<size_t>(slice) * esize,
            static_cast<size_t>(slice));
}

}  // namespace fusor::ref
