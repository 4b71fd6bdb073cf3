// Reference normalizations over channel groups and windows: GroupNormalization,
// InstanceNormalization, LpNormalization, MeanVarianceNormalization and LRN. Statistics are
// taken in double (two passes), whatever stash_type asks, which is at least as precise.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/row_moments.h"

namespace fusor::ref {
namespace {

// Normalizes `rows` contiguous rows of `len` values to zero mean and unit variance, then maps
// each value v at (row, i) through affine(row, i, v).
template <class T, class Affine>
void normalize_rows(const T* x, T* y, int64_t rows, int64_t len, double eps, Affine&& affine) {
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const T* src = x + r * len;
    T* dst = y + r * len;
    const auto [mean, inv] = row_moments(src, len, eps);
    for (int64_t i = 0; i < len; ++i)
      dst[i] = static_cast<T>(affine(r, i, (static_cast<double>(src[i]) - mean) * inv));
  }
}

template <class T>
std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<double>(t.data<T>()[i]);
  return v;
}

}  // namespace

void GroupNormalization(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t groups = node.attr_int("num_groups", 1);
  const int64_t spatial = batch * channels != 0 ? x.numel() / (batch * channels) : 0;
  const int64_t per_group = channels / groups;
  // Opset 18 has one scale and bias per group, opset 21 one per channel (checked by the shape function).
  const bool per_channel = inputs[1].numel() == channels;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const auto scale = as_doubles<T>(inputs[1]), bias = as_doubles<T>(inputs[2]);
    normalize_rows(x.data<T>(), outputs[0].data<T>(), batch * groups, per_group * spatial,
                   node.attr_float("epsilon", 1e-5f), [&](int64_t r, int64_t i, double v) {
                     const int64_t g = r % groups;
                     const size_t k = static_cast<size_t>(per_channel ? g * per_group + i / spatial : g);
                     return v * scale[k] + bias[k];
                   });
  });
}

void InstanceNormalization(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t spatial = batch * channels != 0 ? x.numel() / (batch * channels) : 0;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const auto scale = as_doubles<T>(inputs[1]), bias = as_doubles<T>(inputs[2]);
    normalize_rows(x.data<T>(), outputs[0].data<T>(), batch * channels, spatial, node.attr_float("epsilon", 1e-5f),
                   [&](int64_t r, int64_t, double v) {
                     const size_t c = static_cast<size_t>(r % channels);
                     return v * scale[c] + bias[c];
                   });
  });
}

// A zero vector stays zero (rather than 0/0).
void LpNormalization(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t axis = normalize_axis(node.attr_int("axis", -1), rank, node);
  const bool l1 = node.attr_int("p", 2) == 1;
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  const int64_t len = x.dim(axis);
  const int64_t outer = len * inner != 0 ? x.numel() / (len * inner) : 0;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
#pragma omp parallel for
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * len * inner + in;
        double norm = 0;
        for (int64_t i = 0; i < len; ++i) {
          const double v = static_cast<double>(px[base + i * inner]);
          norm += l1 ? std::fabs(v) : v * v;
        }
        if (!l1) norm = std::sqrt(norm);
        for (int64_t i = 0; i < len; ++i)
          py[base + i * inner] = norm == 0 ? T(0) : static_cast<T>(static_cast<double>(px[base + i * inner]) / norm);
      }
  });
}

// y = (x - mean) / (sqrt(variance) + 1e-9) over `axes`, as ONNX's function body computes it.
void MeanVarianceNormalization(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : node.attr_ints("axes", {0, 2, 3})) reduced[static_cast<size_t>(normalize_axis(a, rank, node))] = true;
  // Each element's statistics slot: its index over the kept dims.
  const auto strides = strides_of(x.dims());
  std::vector<int64_t> slot(static_cast<size_t>(x.numel()));
  int64_t slots = 1;
  {
    std::vector<int64_t> kept_stride(static_cast<size_t>(rank), 0);
    for (int64_t d = rank - 1; d >= 0; --d)
      if (!reduced[static_cast<size_t>(d)]) {
        kept_stride[static_cast<size_t>(d)] = slots;
        slots *= x.dim(d);
      }
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t s = 0;
      for (int64_t d = 0; d < rank; ++d) s += (i / strides[static_cast<size_t>(d)]) % x.dim(d) * kept_stride[static_cast<size_t>(d)];
      slot[static_cast<size_t>(i)] = s;
    }
  }
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    std::vector<double> mean(static_cast<size_t>(slots), 0.0), var(static_cast<size_t>(slots), 0.0);
    std::vector<int64_t> count(static_cast<size_t>(slots), 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      mean[static_cast<size_t>(slot[static_cast<size_t>(i)])] += static_cast<double>(px[i]);
      ++count[static_cast<size_t>(slot[static_cast<size_t>(i)])];
    }
    for (size_t s = 0; s < mean.size(); ++s) mean[s] /= static_cast<double>(std::max<int64_t>(count[s], 1));
    for (int64_t i = 0; i < x.numel(); ++i) {
      const size_t s = static_cast<size_t>(slot[static_cast<size_t>(i)]);
      const double c = static_cast<double>(px[i]) - mean[s];
      var[s] += c * c;
    }
    for (size_t s = 0; s < var.size(); ++s) var[s] = std::sqrt(var[s] / static_cast<double>(std::max<int64_t>(count[s], 1))) + 1e-9;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const size_t s = static_cast<size_t>(slot[static_cast<size_t>(i)]);
      py[i] = static_cast<T>((static_cast<double>(px[i]) - mean[s]) / var[s]);
    }
  });
}

// y = x / (bias + alpha / size * sum of x^2 over the `size` nearest channels)^beta.
void LRN(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t spatial = batch * channels != 0 ? x.numel() / (batch * channels) : 0;
  const int64_t size = node.attr_int("size", 1);
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
#pragma omp parallel for
    for (int64_t nc = 0; nc < batch * channels; ++nc) {
      const int64_t n = nc / channels, c = nc % channels;
      const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
      for (int64_t s = 0; s < spatial; ++s) {
        double sq = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          const double v = static_cast<double>(px[(n * channels + k) * spatial + s]);
          sq += v * v;
        }
        const int64_t at = nc * spatial + s;
        py[at] = static_cast<T>(static_cast<double>(px[at]) / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
      }
    }
  });
}

}  // namespace fusor::ref
