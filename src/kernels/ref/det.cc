// Reference Det: each [M, M] matrix is factored by LU with partial pivoting in double; the
// determinant is the product of the pivots, negated once per row swap.
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

double lu_determinant(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t col = 0; col < m; ++col) {
    int64_t pivot = col;
    for (int64_t r = col + 1; r < m; ++r)
      if (std::abs(a[static_cast<size_t>(r * m + col)]) > std::abs(a[static_cast<size_t>(pivot * m + col)])) pivot = r;
    double p = a[static_cast<size_t>(pivot * m + col)];
    if (p == 0.0) return 0.0;  // singular (a NaN pivot falls through and propagates)
    if (pivot != col) {
      for (int64_t c = 0; c < m; ++c) std::swap(a[static_cast<size_t>(pivot * m + c)], a[static_cast<size_t>(col * m + c)]);
      det = -det;
    }
    det *= p;
    for (int64_t r = col + 1; r < m; ++r) {
      double f = a[static_cast<size_t>(r * m + col)] / p;
      for (int64_t c = col + 1; c < m; ++c) a[static_cast<size_t>(r * m + c)] -= f * a[static_cast<size_t>(col * m + c)];
    }
  }
  return det;
}

}  // namespace

void Det(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const int64_t m = x.dim(-1), count = outputs[0].numel();
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = x.data<T>();
    T* dst = outputs[0].data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < count; ++b) {
      std::vector<double> a(static_cast<size_t>(m * m));
      for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = static_cast<double>(src[b * m * m + i]);
      dst[b] = static_cast<T>(lu_determinant(a, m));
    }
  });
}

}  // namespace fusor::ref
