// Reference ReduceSum, ReduceMean and ReduceMax. Floats accumulate in double, integers in
// int64. Axes come from the attribute (older opsets) or the optional second input.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

enum class Kind { Sum, Mean, Max };

void reduce(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs, Kind kind) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const Dims& dims = x.dims();
  size_t rank = dims.size();
  int from_input = node.op == Op::ReduceSum ? 13 : 18;
  std::vector<int64_t> axes;
  bool noop_empty = false;
  if (node.opset >= from_input) {
    if (inputs.size() > 1 && inputs[1].defined()) axes = inputs[1].to_int64_vector();
    noop_empty = node.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = node.attr_ints("axes");
  }
  if (axes.empty() && noop_empty) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(rank), node))] = true;

  // Stride of each input dim in the output (0 for reduced dims).
  std::vector<int64_t> ostride(rank, 0);
  int64_t acc_stride = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) continue;
    ostride[d] = acc_stride;
    acc_stride *= dims[d];
  }
  int64_t n_out = y.numel();
  int64_t n_in = x.numel();
  int64_t count = n_out == 0 ? 0 : n_in / std::max<int64_t>(n_out, 1);

  visit_dtype(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      fail(node, std::string("unsupported dtype ") + dtype_name(x.dtype()));
    } else {
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
      Acc init = 0;
      if (kind == Kind::Max)
        init = std::is_floating_point_v<T> ? -std::numeric_limits<Acc>::infinity()
                                           : std::numeric_limits<Acc>::lowest();
      std::vector<Acc> acc(static_cast<size_t>(n_out), init);
      const T* in = x.data<T>();
      if (n_in > 0) {
        int64_t last = rank ? dims[rank - 1] : 1;
        int64_t last_os = rank ? ostride[rank - 1] : 0;
        std::vector<int64_t> idx(rank, 0);
        int64_t base = 0;  // output offset of the current row, last dim excluded
        for (int64_t start = 0; start < n_in; start += last) {
          const T* row = in + start;
          Acc* o = acc.data() + base;
          if (kind == Kind::Max) {
            for (int64_t i = 0; i < last; ++i) {
              Acc v = static_cast<Acc>(row[i]);
              Acc& a = o[i * last_os];
              if (!(a != a) && (v != v || v > a)) a = v;
            }
          } else {
            for (int64_t i = 0; i < last; ++i) o[i * last_os] += static_cast<Acc>(row[i]);
          }
          // Advance the odometer over dims [0, rank-1).
          for (size_t d = rank > 1 ? rank - 1 : 0; d-- > 0;) {
            base += ostride[d];
            if (++idx[d] < dims[d]) break;
            base -= ostride[d] * dims[d];
            idx[d] = 0;
          }
        }
      }
      T* out = y.data<T>();
      for (int64_t i = 0; i < n_out; ++i) {
        Acc v = acc[static_cast<size_t>(i)];
        if (kind == Kind::Mean) {
          if constexpr (std::is_floating_point_v<T>) v = v / static_cast<double>(count);
          else v = count ? v / count : 0;
        }
        out[i] = static_cast<T>(v);
      }
    }
  });
}

}  // namespace

void ReduceSum(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  reduce(node, inputs, outputs, Kind::Sum);
}
void ReduceMean(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  reduce(node, inputs, outputs, Kind::Mean);
}
void ReduceMax(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  reduce(node, inputs, outputs, Kind::Max);
}

}  // namespace fusor::ref
