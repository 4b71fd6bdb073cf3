// Reference LayerNormalization (opset 17): normalizes over dims [axis, rank). Mean and variance
// are taken in double (two passes); stash_type only picks the dtype of Mean and InvStdDev.
#include <cmath>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/row_moments.h"

namespace fusor::ref {
namespace {

// Expands a parameter broadcastable to the normalized shape `norm` into `d` contiguous values.
template <class T>
std::vector<double> expand_param(const Tensor& p, const Dims& norm) {
  int64_t d = numel_of(norm);
  std::vector<double> out(static_cast<size_t>(d));
  const T* src = p.data<T>();
  auto st = broadcast_strides(p.dims(), norm);
  auto ost = strides_of(norm);
  for (int64_t i = 0; i < d; ++i) {
    int64_t off = 0, rem = i;
    for (size_t k = 0; k < norm.size(); ++k) {
      off += (rem / ost[k]) * st[k];
      rem %= ost[k];
    }
    out[static_cast<size_t>(i)] = static_cast<double>(src[off]);
  }
  return out;
}

}  // namespace

void LayerNormalization(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  double eps = node.attr_float("epsilon", 1e-5f);
  Dims norm(x.dims().begin() + axis, x.dims().end());
  int64_t d = numel_of(norm);
  int64_t rows = d == 0 ? 0 : x.numel() / d;
  Tensor* mean_out = outputs.size() > 1 && outputs[1].defined() ? &outputs[1] : nullptr;
  Tensor* inv_out = outputs.size() > 2 && outputs[2].defined() ? &outputs[2] : nullptr;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    std::vector<double> scale = expand_param<T>(inputs[1], norm);
    std::vector<double> bias;
    if (inputs.size() > 2 && inputs[2].defined()) bias = expand_param<T>(inputs[2], norm);
    const T* in = x.data<T>();
    T* out = outputs[0].data<T>();
    // Mean and InvStdDev are float32 or float64 (the stash type), independent of T.
    auto store = [](Tensor* t, int64_t i, double v) {
      if (!t) return;
      if (t->dtype() == DType::Float64) t->data<double>()[i] = v;
      else t->data<float>()[i] = static_cast<float>(v);
    };
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = in + r * d;
      T* dst = out + r * d;
      const auto [mean, inv] = row_moments(src, d, eps);
      for (int64_t i = 0; i < d; ++i) {
        double v = (static_cast<double>(src[i]) - mean) * inv * scale[static_cast<size_t>(i)];
        if (!bias.empty()) v += bias[static_cast<size_t>(i)];
        dst[i] = static_cast<T>(v);
      }
      store(mean_out, r, mean);
      store(inv_out, r, inv);
    }
  });
}

}  // namespace fusor::ref
