// Reference ArgMax and ArgMin: the int64 index of the extreme along `axis`; ties go to the first
// index, or the last with select_last_index. A NaN counts as the extreme (the first NaN, or the
// last with select_last_index), as numpy's argmax/argmin on which the spec's reference rests.
#include <cmath>
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

void arg_extreme(const Node& node, const Tensor& x, Tensor& y, bool max) {
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(node.attr_int("axis", 0), rank, node);
  bool last = node.attr_int("select_last_index", 0) != 0;
  int64_t outer = 1, d = x.dims()[static_cast<size_t>(axis)], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims()[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims()[static_cast<size_t>(i)];
  int64_t* out = y.data<int64_t>();
  visit_dtype(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>) {
      fail(node, "unsupported dtype bool");
    } else {
      const T* in = x.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          const T* p = in + o * d * inner + j;
          int64_t best = 0;
          for (int64_t i = 1; i < d; ++i) {
            T v = p[i * inner], b = p[best * inner];
            bool better = is_nan(b) ? last && is_nan(v) : is_nan(v) || (max ? v > b : v < b) || (last && v == b);
            if (better) best = i;
          }
          out[o * inner + j] = best;
        }
      }
    }
  });
}

}  // namespace

void ArgMax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  arg_extreme(node, inputs[0], outputs[0], true);
}

void ArgMin(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  arg_extreme(node, inputs[0], outputs[0], false);
}

}  // namespace fusor::ref
