// Reference MaxPool, AveragePool, LpPool (1 to 3 spatial dims), GlobalAveragePool and GlobalMaxPool. Averages are
// taken in double. With ceil_mode, windows may run past the padded input; with
// count_include_pad the divisor counts the taps inside the padded input, not past it, as
// PyTorch (whose exports these are) and ONNX Runtime divide. ONNX 1.17's reference divides by
// the whole kernel there, so its node test averagepool_3d_dilations_large_count_include_pad_is_1_
// ceil_mode_is_True expects otherwise (ONNX Runtime fails it too).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/window.h"

namespace fusor::ref {
namespace {

template <class T, class F>
void for_each_window(const Window& w, int64_t planes, F&& f) {
  int64_t p_len = w.out[0] * w.out[1] * w.out[2];
#pragma omp parallel for
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t p = 0; p < p_len; ++p) {
      int64_t ox = p % w.out[2], oy = (p / w.out[2]) % w.out[1], oz = p / (w.out[2] * w.out[1]);
      f(plane, p, std::array<int64_t, 3>{oz * w.s[0] - w.pb[0], oy * w.s[1] - w.pb[1], ox * w.s[2] - w.pb[2]});
    }
}

// Calls f(iz, iy, ix) for each kernel tap of the window starting at `st` that lands inside
// the input (padding taps are skipped).
template <class F>
void for_each_tap(const Window& w, const std::array<int64_t, 3>& st, F&& f) {
  for (int64_t kz = 0; kz < w.k[0]; ++kz) {
    int64_t iz = st[0] + kz * w.d[0];
    if (iz < 0 || iz >= w.in[0]) continue;
    for (int64_t ky = 0; ky < w.k[1]; ++ky) {
      int64_t iy = st[1] + ky * w.d[1];
      if (iy < 0 || iy >= w.in[1]) continue;
      for (int64_t kx = 0; kx < w.k[2]; ++kx) {
        int64_t ix = st[2] + kx * w.d[2];
        if (ix >= 0 && ix < w.in[2]) f(iz, iy, ix);
      }
    }
  }
}

// For each output of a windowed pool: y = finish(sum of term(x) over the window's taps inside
// the input, how many taps those are, how many lie inside the padded input), in double
// (AveragePool, LpPool).
template <class Term, class Finish>
void sum_windows(const Node& node, const Tensor& x, Tensor& y, Term&& term, Finish&& finish) {
  const Window w = window_of(node, x.dims(), y.dims(), node.attr_ints("kernel_shape"));
  // Taps of the window starting at `st` inside the padded input (a ceil_mode window may run past it).
  auto padded_taps = [&w](const std::array<int64_t, 3>& st) {
    int64_t taps = 1;
    for (int i = 0; i < 3; ++i) {
      int64_t n = 0;
      for (int64_t k = 0; k < w.k[i]; ++k) n += st[i] + k * w.d[i] < w.in[i] + w.pe[i];
      taps *= n;
    }
    return taps;
  };
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_vol = w.in[0] * w.in[1] * w.in[2], p_len = w.out[0] * w.out[1] * w.out[2];
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_each_window<T>(w, planes, [&](int64_t plane, int64_t p, std::array<int64_t, 3> st) {
      const T* xc = px + plane * in_vol;
      double sum = 0;
      int64_t valid = 0;
      for_each_tap(w, st, [&](int64_t iz, int64_t iy, int64_t ix) {
        ++valid;
        sum += term(static_cast<double>(xc[(iz * w.in[1] + iy) * w.in[2] + ix]));
      });
      py[plane * p_len + p] = static_cast<T>(finish(sum, valid, padded_taps(st)));
    });
  });
}

// y[plane] = reduce(the plane's values, their count) for each N x C plane of x (global pools).
template <class Reduce>
void reduce_planes(const Node& node, const Tensor& x, Tensor& y, Reduce&& reduce) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t vol = planes ? x.numel() / planes : 0;
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
#pragma omp parallel for
    for (int64_t pl = 0; pl < planes; ++pl) py[pl] = static_cast<T>(reduce(px + pl * vol, vol));
  });
}

// LpPool's p: an int from opset 11, a float before.
double lp_pool_p(const Node& node) {
  auto it = node.attrs.find("p");
  if (it != node.attrs.end() && std::holds_alternative<float>(it->second)) return std::get<float>(it->second);
  return static_cast<double>(node.attr_int("p", 2));
}

}  // namespace

void MaxPool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  Window w = window_of(node, x.dims(), outputs[0].dims(), node.attr_ints("kernel_shape"));
  int64_t planes = x.dim(0) * x.dim(1);
  int64_t in_vol = w.in[0] * w.in[1] * w.in[2], p_len = w.out[0] * w.out[1] * w.out[2];
  int64_t* indices = outputs.size() > 1 && outputs[1].defined() ? outputs[1].data<int64_t>() : nullptr;
  bool col_major = node.attr_int("storage_order", 0) != 0;
  visit_dtype(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      fail(node, std::string("unsupported dtype ") + dtype_name(x.dtype()));
    } else {
      const T* px = x.data<T>();
      T* py = outputs[0].data<T>();
      for_each_window<T>(w, planes, [&](int64_t plane, int64_t p, std::array<int64_t, 3> st) {
        const T* xc = px + plane * in_vol;
        T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::lowest();
        int64_t best_at = -1;
        for_each_tap(w, st, [&](int64_t iz, int64_t iy, int64_t ix) {
          T v = xc[(iz * w.in[1] + iy) * w.in[2] + ix];
          // A NaN in the window is the answer (numpy's and PyTorch's max): once taken, nothing
          // compares greater. It was kept only as the window's first tap.
          if (best_at < 0 || v > best || (!(v == v) && best == best)) {
            best = v;
            best_at = col_major ? (ix * w.in[1] + iy) * w.in[0] + iz : (iz * w.in[1] + iy) * w.in[2] + ix;
          }
        });
        py[plane * p_len + p] = best;
        if (indices) indices[plane * p_len + p] = plane * in_vol + std::max<int64_t>(best_at, 0);
      });
    }
  });
}

void AveragePool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  sum_windows(node, inputs[0], outputs[0], [](double v) { return v; },
              [&](double sum, int64_t valid, int64_t padded) {
                const int64_t count = include_pad ? padded : valid;
                return count ? sum / static_cast<double>(count) : 0.0;
              });
}

void GlobalAveragePool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  reduce_planes(node, inputs[0], outputs[0], [](const auto* src, int64_t vol) {
    double sum = 0;
    for (int64_t i = 0; i < vol; ++i) sum += static_cast<double>(src[i]);
    return sum / static_cast<double>(vol);
  });
}

void GlobalMaxPool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  reduce_planes(node, inputs[0], outputs[0], [](const auto* src, int64_t vol) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(src)>>;
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < vol; ++i)
      if (src[i] > best || std::isnan(src[i])) best = src[i];
    return best;
  });
}

// (sum over the window of |x|^p)^(1/p); taps in the padding add zero.
void LpPool(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const double p = lp_pool_p(node);
  sum_windows(node, inputs[0], outputs[0], [&](double v) { return std::pow(std::fabs(v), p); },
              [&](double sum, int64_t, int64_t) { return std::pow(sum, 1.0 / p); });
}

}  // namespace fusor::ref
