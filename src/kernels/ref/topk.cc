// Reference TopK: the k largest (or smallest) elements along `axis` with their int64 indices,
// in order; equal values keep the lower index first. NaN ranks above every number for largest
// and below every number for smallest, as numpy's sort puts it last.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

template <class T>
bool is_nan(T v) {
  return std::is_floating_point_v<T> && std::isnan(static_cast<double>(v));
}

}  // namespace

void TopK(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  Tensor& values = outputs[0];
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  bool largest = node.attr_int("largest", 1) != 0;
  int64_t d = x.dims()[static_cast<size_t>(axis)];
  int64_t k = values.dims()[static_cast<size_t>(axis)];  // checked against d by the shape function
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims()[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims()[static_cast<size_t>(i)];
  int64_t* idx_out = outputs.size() > 1 && outputs[1].defined() ? outputs[1].data<int64_t>() : nullptr;
  visit_dtype(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* in = x.data<T>();
    T* val_out = values.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(d));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        const T* p = in + o * d * inner + j;
        auto before = [&](int64_t a, int64_t b) {
          T va = p[a * inner], vb = p[b * inner];
          bool na = is_nan(va), nb = is_nan(vb);
          if (na != nb) return largest ? na : nb;
          if (!na && va != vb) return largest ? va > vb : va < vb;
          return a < b;
        };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t r = 0; r < k; ++r) {
          int64_t at = o * k * inner + r * inner + j;
          val_out[at] = p[order[static_cast<size_t>(r)] * inner];
          if (idx_out) idx_out[at] = order[static_cast<size_t>(r)];
        }
      }
    }
  });
}

}  // namespace fusor::ref
