// Reference Reduce* kernels (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare).
// Floats accumulate in double; integers in 64 bits, except the kinds that take a log or a square
// root, which go through double. Axes come from the attribute (older opsets) or the optional
// second input. An empty reduction gives the kind's identity (0, 1, +inf for Min, -inf for Max
// and LogSumExp; for integers the dtype's extreme values).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

bool needs_double(Kind k) { return k == Kind::L2 || k == Kind::LogSum || k == Kind::LogSumExp; }

// Converts a double result to T; an integer output takes 0 for NaN and saturates at infinities.
template <class T>
T to_output(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    if (std::isnan(v)) return 0;
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  }
}

// Maps every input element to its output slot: f(output_index, input_index). The output index
// skips reduced dims (stride 0), so one row-major walk of the input visits each group.
class ReduceWalk {
 public:
  ReduceWalk(const Dims& dims, const std::vector<bool>& reduced) : dims_(dims), ostride_(dims.size(), 0) {
    int64_t acc = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      if (reduced[d]) continue;
      ostride_[d] = acc;
      acc *= dims[d];
    }
  }

  template <class F>
  void operator()(F&& f) const {
    int64_t n_in = numel_of(dims_);
    if (n_in == 0) return;
    size_t rank = dims_.size();
    int64_t last = rank ? dims_[rank - 1] : 1;
    int64_t last_os = rank ? ostride_[rank - 1] : 0;
    std::vector<int64_t> idx(rank, 0);
    int64_t base = 0;  // output offset of the current row, last dim excluded
    for (int64_t start = 0; start < n_in; start += last) {
      for (int64_t i = 0; i < last; ++i) f(base + i * last_os, start + i);
      for (size_t d = rank > 1 ? rank - 1 : 0; d-- > 0;) {  // advance the odometer over dims [0, rank-1)
        base += ostride_[d];
        if (++idx[d] < dims_[d]) break;
        base -= ostride_[d] * dims_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  const Dims& dims_;
  std::vector<int64_t> ostride_;
};

template <class T, class Acc>
void reduce_typed(const T* in, T* out, int64_t n_out, int64_t count, const ReduceWalk& walk, Kind kind) {
  constexpr bool is_float = std::is_floating_point_v<Acc>;
  Acc init = 0;
  if (kind == Kind::Prod) init = 1;
  if (kind == Kind::Max || kind == Kind::LogSumExp)
    init = is_float ? -std::numeric_limits<Acc>::infinity() : static_cast<Acc>(std::numeric_limits<T>::lowest());
  if (kind == Kind::Min)
    init = is_float ? std::numeric_limits<Acc>::infinity() : static_cast<Acc>(std::numeric_limits<T>::max());
  std::vector<Acc> acc(static_cast<size_t>(n_out), init);
  auto value = [&](int64_t i) { return static_cast<Acc>(in[i]); };
  switch (kind) {
    case Kind::Max:
    case Kind::Min: {
      // NaN propagates: once a slot holds NaN it stays NaN.
      bool is_max = kind == Kind::Max;
      walk([&](int64_t o, int64_t i) {
        Acc v = value(i);
        Acc& a = acc[static_cast<size_t>(o)];
        if (!(a != a) && (v != v || (is_max ? v > a : v < a))) a = v;
      });
      break;
    }
    case Kind::Prod: walk([&](int64_t o, int64_t i) { acc[static_cast<size_t>(o)] *= value(i); }); break;
    case Kind::L1:
      walk([&](int64_t o, int64_t i) {
        Acc v = value(i);
        if constexpr (std::is_signed_v<T>)
          if (in[i] < 0) v = Acc{0} - v;  // exact in wrapping uint64, INT64_MIN included
        acc[static_cast<size_t>(o)] += v;
      });
      break;
    case Kind::L2:
    case Kind::SumSquare:
      walk([&](int64_t o, int64_t i) { acc[static_cast<size_t>(o)] += value(i) * value(i); });
      break;
    case Kind::LogSumExp: {
      if constexpr (!is_float) break;  // integers reduce through double
      // Shift by each group's max so exp cannot overflow; an all -inf (or empty) group stays -inf.
      std::vector<Acc> mx(acc);
      walk([&](int64_t o, int64_t i) {
        Acc& m = mx[static_cast<size_t>(o)];
        if (value(i) > m) m = value(i);
      });
      std::fill(acc.begin(), acc.end(), Acc{0});
      walk([&](int64_t o, int64_t i) {
        Acc m = mx[static_cast<size_t>(o)];
        acc[static_cast<size_t>(o)] += std::exp(value(i) - (std::isfinite(m) ? m : 0));
      });
      for (size_t o = 0; o < acc.size(); ++o) acc[o] = std::log(acc[o]) + (std::isfinite(mx[o]) ? mx[o] : 0);
      break;
    }
    default: walk([&](int64_t o, int64_t i) { acc[static_cast<size_t>(o)] += value(i); }); break;
  }
  for (int64_t o = 0; o < n_out; ++o) {
    Acc v = acc[static_cast<size_t>(o)];
    if (kind == Kind::Mean) {
      if constexpr (is_float) v = v / static_cast<double>(count);
      else if constexpr (std::is_signed_v<T>) v = count ? static_cast<Acc>(static_cast<int64_t>(v) / count) : 0;
      else v = count ? v / static_cast<Acc>(count) : 0;
    }
    if constexpr (is_float) {
      if (kind == Kind::L2) v = std::sqrt(v);
      if (kind == Kind::LogSum) v = std::log(v);
      out[o] = to_output<T>(v);
    } else {
      out[o] = static_cast<T>(v);
    }
  }
}

void reduce(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs, Kind kind) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const Dims& dims = x.dims();
  int64_t rank = static_cast<int64_t>(dims.size());
  int from_input = node.op == Op::ReduceSum ? 13 : 18;
  std::vector<int64_t> axes;
  bool noop_empty = false;
  if (node.opset >= from_input) {
    if (inputs.size() > 1 && inputs[1].defined()) axes = inputs[1].to_int64_vector();
    noop_empty = node.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = node.attr_ints("axes");
  }
  // No axes with noop_with_empty_axes reduces nothing, but each element still takes the kind's
  // elementwise part: |x| for L1 and L2, x^2 for SumSquare, log x for LogSum (the spec as
  // onnx/onnx#7394 clarified it, and ONNX Runtime 1.30); for the others that is x.
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop_empty);
  for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(a, rank, node))] = true;
  ReduceWalk walk(dims, reduced);
  int64_t n_out = y.numel();
  int64_t count = n_out == 0 ? 0 : x.numel() / n_out;

  visit_dtype(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool>) {
      if (kind != Kind::Max && kind != Kind::Min) fail(node, "bool input is supported by ReduceMax and ReduceMin only");
      reduce_typed<T, int64_t>(x.data<T>(), y.data<T>(), n_out, count, walk, kind);
    } else if constexpr (std::is_floating_point_v<T>) {
      reduce_typed<T, double>(x.data<T>(), y.data<T>(), n_out, count, walk, kind);
    } else {
      // Extremes compare in the input's signedness; sums and products wrap in uint64 (no
      // signed-overflow UB; the low bits, hence the cast back to T, are the same).
      using Extreme = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      if (needs_double(kind)) reduce_typed<T, double>(x.data<T>(), y.data<T>(), n_out, count, walk, kind);
      else if (kind == Kind::Max || kind == Kind::Min)
        reduce_typed<T, Extreme>(x.data<T>(), y.data<T>(), n_out, count, walk, kind);
      else reduce_typed<T, uint64_t>(x.data<T>(), y.data<T>(), n_out, count, walk, kind);
    }
  });
}

}  // namespace

#define FUSOR_REF_REDUCE(op, kind)                                                            \
  void op(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {  \
    reduce(node, inputs, outputs, Kind::kind);                                             \
  }
FUSOR_REF_REDUCE(ReduceSum, Sum)
FUSOR_REF_REDUCE(ReduceMean, Mean)
FUSOR_REF_REDUCE(ReduceMax, Max)
FUSOR_REF_REDUCE(ReduceMin, Min)
FUSOR_REF_REDUCE(ReduceProd, Prod)
FUSOR_REF_REDUCE(ReduceL1, L1)
FUSOR_REF_REDUCE(ReduceL2, L2)
FUSOR_REF_REDUCE(ReduceLogSum, LogSum)
FUSOR_REF_REDUCE(ReduceLogSumExp, LogSumExp)
FUSOR_REF_REDUCE(ReduceSumSquare, SumSquare)
#undef FUSOR_REF_REDUCE

}  // namespace fusor::ref
