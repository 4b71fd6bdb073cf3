// Reference AffineGrid: each output point is theta times the homogeneous base coordinate
// (x, y[, z], 1) of its pixel, normalized to [-1, 1] (pixel centres, or corners with
// align_corners). The grid's last dim lists coordinates fastest dim first: (x, y[, z]).
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void AffineGrid(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& theta = inputs[0];
  Tensor& grid = outputs[0];
  const bool align = node.attr_int("align_corners", 0) != 0;
  const int64_t k = grid.dims().back(), batch = grid.dim(0);
  const Dims spatial(grid.dims().begin() + 1, grid.dims().end() - 1);  // D, H, W (or H, W)
  const int64_t points = numel_of(spatial);
  // Base coordinates along each spatial dim.
  std::vector<std::vector<double>> base;
  for (int64_t n : spatial) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = align ? (n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0)
                                        : -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
    base.push_back(std::move(v));
  }
  visit_float(theta.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* th = theta.data<T>();
    T* dst = grid.data<T>();
    std::vector<double> homo(static_cast<size_t>(k + 1));
    for (int64_t b = 0; b < batch; ++b) {
      const T* m = th + b * k * (k + 1);
      for (int64_t pt = 0; pt < points; ++pt) {
        // Homogeneous coordinate: fastest spatial dim first, then 1.
        int64_t rest = pt;
        for (int64_t d = k - 1; d >= 0; --d) {
          const int64_t n = spatial[static_cast<size_t>(d)];
          homo[static_cast<size_t>(k - 1 - d)] = base[static_cast<size_t>(d)][static_cast<size_t>(rest % n)];
          rest /= n;
        }
        homo[static_cast<size_t>(k)] = 1.0;
        T* out = dst + (b * points + pt) * k;
        for (int64_t r = 0; r < k; ++r) {
          double s = 0;
          for (int64_t c = 0; c <= k; ++c) s += static_cast<double>(m[r * (k + 1) + c]) * homo[static_cast<size_t>(c)];
          out[r] = static_cast<T>(s);
        }
      }
    }
  });
}

}  // namespace fusor::ref
