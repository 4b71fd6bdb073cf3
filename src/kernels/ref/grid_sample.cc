// Reference GridSample over any number of spatial dims. Each output point turns its normalized
// grid coordinates into per-dim taps (1 nearest, 2 linear, 4 cubic with Keys' a = -0.75); the
// value is the sum over the taps' tensor product, read with the padding rule. Math in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ir/sampling_params.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

struct Tap {
  int64_t index;  // -1: outside the input with zeros padding
  double weight;
};

// Bounces x off the borders lo and hi until it lies between them.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double flips = std::floor(dx / range), r = dx - flips * range;
  const bool even = std::fmod(flips, 2.0) == 0.0;
  return (x < lo) == even ? lo + r : hi - r;
}

void cubic_weights(double t, double w[4]) {
  constexpr double a = -0.75;
  auto near = [](double s) { return ((a + 2) * s - (a + 3)) * s * s + 1; };        // |s| <= 1
  auto far = [](double s) { return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a; };  // 1 < |s| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// The taps of one spatial dim of `size` for a normalized coordinate; false when it is not finite.
bool dim_taps(const GridSampleParams& p, double normalized, int64_t size, std::vector<Tap>& taps) {
  const double n = static_cast<double>(size);
  double x = p.align_corners ? (normalized + 1) / 2 * (n - 1) : ((normalized + 1) * n - 1) / 2;
  const double lo = p.align_corners ? 0.0 : -0.5, hi = p.align_corners ? n - 1 : n - 0.5;
  // An infinite coordinate lies outside like a huge one: zeros padding reads 0, border the edge
  // pixel (both were NaN); reflection has no place to bounce it to.
  if (std::isinf(x) && p.padding != GridSamplePadding::Reflection) x = x > 0 ? hi + 8 : lo - 8;
  if (!std::isfinite(x)) return false;
  if (p.mode == GridSampleMode::Nearest) x = std::nearbyint(x);  // ties to even, as PyTorch
  if (x < lo || x > hi) {
    // Cubic taps are clamped one by one (as PyTorch and ONNX Runtime do); ONNX's Python
    // reference clamps the coordinate first, which no node test exercises.
    if (p.padding == GridSamplePadding::Border && p.mode != GridSampleMode::Cubic) x = std::clamp(x, 0.0, n - 1);
    else if (p.padding == GridSamplePadding::Reflection) x = reflect(x, lo, hi);
  }
  x = std::clamp(x, -4.0, n + 3);  // far outside, every tap still reads padding; keeps casts defined
  auto resolve = [&](int64_t i) -> int64_t {
    switch (p.padding) {
      case GridSamplePadding::Zeros: return i >= 0 && i < size ? i : -1;
      case GridSamplePadding::Border: return std::clamp<int64_t>(i, 0, size - 1);
      case GridSamplePadding::Reflection:
        return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, size - 1);
    }
    return -1;
  };
  taps.clear();
  if (p.mode == GridSampleMode::Nearest) {
    taps.push_back({resolve(static_cast<int64_t>(x)), 1.0});
  } else if (p.mode == GridSampleMode::Linear) {
    const double x0 = std::floor(x), t = x - x0;
    taps.push_back({resolve(static_cast<int64_t>(x0)), 1 - t});
    taps.push_back({resolve(static_cast<int64_t>(x0) + 1), t});
  } else {
    const double x0 = std::floor(x);
    double w[4];
    cubic_weights(x - x0, w);
    for (int k = 0; k < 4; ++k) taps.push_back({resolve(static_cast<int64_t>(x0) - 1 + k), w[k]});
  }
  return true;
}

}  // namespace

void GridSample(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const GridSampleParams p = grid_sample_params(node);
  const Tensor &x = inputs[0], &grid = inputs[1];
  Tensor& y = outputs[0];
  const size_t k = x.rank() - 2;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const Dims in_dims(x.dims().begin() + 2, x.dims().end());
  const std::vector<int64_t> in_strides = strides_of(in_dims);
  const int64_t in_plane = numel_of(in_dims), points = numel_of(Dims(grid.dims().begin() + 1, grid.dims().end() - 1));
  std::vector<double> g(static_cast<size_t>(grid.numel()));
  visit_float(grid.dtype(), node, [&](auto* tag) {
    const auto* src = grid.data<elem_t<decltype(tag)>>();
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(src[i]);
  });
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = x.data<T>();
    T* dst = y.data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t np = 0; np < batch * points; ++np) {
      const int64_t b = np / points, pt = np % points;
      // Taps per dim, then their tensor product as (offset, weight) pairs.
      std::vector<std::pair<int64_t, double>> combos = {{0, 1.0}}, next;
      std::vector<Tap> taps;
      bool finite = true;
      for (size_t d = 0; d < k && finite; ++d) {
        const double coord = g[static_cast<size_t>(np * static_cast<int64_t>(k) + static_cast<int64_t>(k - 1 - d))];
        finite = dim_taps(p, coord, in_dims[d], taps);
        next.clear();
        for (const auto& [off, w] : combos)
          for (const Tap& t : taps)
            if (t.index >= 0) next.push_back({off + t.index * in_strides[d], w * t.weight});
        combos.swap(next);
      }
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = src + (b * channels + c) * in_plane;
        double v = 0;
        for (const auto& [off, w] : combos) v += w * static_cast<double>(plane[off]);
        dst[(b * channels + c) * points + pt] = finite ? static_cast<T>(v) : std::numeric_limits<T>::quiet_NaN();
      }
    }
  });
}

}  // namespace fusor::ref
