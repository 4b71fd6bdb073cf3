// Reference CumSum along the axis given as a scalar input; `exclusive` leaves out the element
// itself, `reverse` sums from the end. Floats accumulate in double; integers in uint64, whose
// wraparound gives the two's-complement result of every integer width without overflow UB.
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void CumSum(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  std::vector<int64_t> axis_v = inputs[1].to_int64_vector();
  if (axis_v.size() != 1) fail(node, "axis must be a scalar");
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(axis_v[0], rank, node);
  bool exclusive = node.attr_int("exclusive", 0) != 0;
  bool reverse = node.attr_int("reverse", 0) != 0;
  int64_t outer = 1, d = x.dims()[static_cast<size_t>(axis)], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims()[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dims()[static_cast<size_t>(i)];
  visit_dtype(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>) {
      fail(node, "unsupported dtype bool");
    } else {
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
      const T* in = x.data<T>();
      T* out = outputs[0].data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          int64_t base = o * d * inner + j;
          Acc acc = 0;
          for (int64_t s = 0; s < d; ++s) {
            int64_t at = base + (reverse ? d - 1 - s : s) * inner;
            Acc v = static_cast<Acc>(in[at]);
            if (!exclusive) acc += v;
            out[at] = static_cast<T>(acc);
            if (exclusive) acc += v;
          }
        }
      }
    }
  });
}

}  // namespace fusor::ref
