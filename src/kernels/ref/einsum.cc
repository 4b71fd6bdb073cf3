// Reference Einsum: for each output element, sums the product of the operands over the summed
// axes (ir/einsum_equation.h lays the axes out). Accumulates in double for floats.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "ir/einsum_equation.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void Einsum(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  std::vector<Dims> dims;
  for (const Tensor& t : inputs) dims.push_back(t.dims());
  const EinsumAxes ax = einsum_axes(node, node.attr_string("equation", ""), dims);
  const size_t n_axes = ax.sizes.size(), n_out = ax.output_rank, n_ops = inputs.size();
  int64_t out_numel = 1, sum_numel = 1;
  for (size_t a = 0; a < n_axes; ++a) (a < n_out ? out_numel : sum_numel) *= ax.sizes[a];
  visit_dtype(inputs[0].dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double> && !std::is_same_v<T, int32_t> &&
                  !std::is_same_v<T, int64_t>) {
      fail(node, std::string("unsupported dtype ") + dtype_name(inputs[0].dtype()));
    } else {
      // Integers accumulate in uint64: overflow wraps as in numpy instead of being undefined.
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
      std::vector<const T*> src;
      for (const Tensor& t : inputs) src.push_back(t.data<T>());
      T* dst = outputs[0].data<T>();
#pragma omp parallel
      {
        std::vector<int64_t> off(n_ops), idx(n_axes);
#pragma omp for schedule(static)
        for (int64_t o = 0; o < out_numel; ++o) {
          // Offsets of this output element in every operand, then an odometer over summed axes.
          std::fill(off.begin(), off.end(), 0);
          std::fill(idx.begin(), idx.end(), 0);
          int64_t rest = o;
          for (size_t a = n_out; a-- > 0;) {
            idx[a] = rest % ax.sizes[a];
            rest /= ax.sizes[a];
            for (size_t k = 0; k < n_ops; ++k) off[k] += idx[a] * ax.strides[k][a];
          }
          Acc sum = 0;
          for (int64_t r = 0; r < sum_numel; ++r) {
            Acc prod = 1;
            for (size_t k = 0; k < n_ops; ++k) prod *= static_cast<Acc>(src[k][off[k]]);
            sum += prod;
            for (size_t a = n_axes; a-- > n_out;) {
              for (size_t k = 0; k < n_ops; ++k) off[k] += ax.strides[k][a];
              if (++idx[a] < ax.sizes[a]) break;
              for (size_t k = 0; k < n_ops; ++k) off[k] -= ax.strides[k][a] * ax.sizes[a];
              idx[a] = 0;
            }
          }
          dst[o] = static_cast<T>(sum);
        }
      }
    }
  });
}

}  // namespace fusor::ref
