#include "serve/classification.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "serve/status.h"

namespace fusor::serve {
namespace {

bool classifiable(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Int64 || d == DType::Int32 || d == DType::Int8 ||
         d == DType::UInt8;
}

}  // namespace

Classes classify(const Tensor& scores, int64_t k, bool batched, const std::string& output) {
  if (k < 1) throw RequestError{Code::BadRequest, "output '" + output + "': 'classification' must be 1 or more"};
  if (!classifiable(scores.dtype()))
    throw RequestError{Code::BadRequest, "output '" + output + "' is not numeric: it cannot be classified"};
  const int64_t rows = batched && scores.rank() > 0 ? scores.dims()[0] : 1;
  const int64_t per_row = rows ? scores.numel() / rows : 0;
  k = std::min(k, per_row);
  Classes c;
  c.dims = batched ? Dims{rows, k} : Dims{k};
  std::vector<int64_t> order(static_cast<size_t>(per_row));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * per_row;
    std::iota(order.begin(), order.end(), 0);
    // Largest first, NaN last (a strict order even then); equal values in index order.
    auto key = [&](int64_t i) {
      const double v = scores.scalar_as_double(base + i);
      return std::isnan(v) ? -std::numeric_limits<double>::infinity() : v;
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      const double va = key(a), vb = key(b);
      return va > vb || (va == vb && a < b);
    });
    for (int64_t i = 0; i < k; ++i)
      c.items.push_back(std::to_string(scores.scalar_as_double(base + order[static_cast<size_t>(i)])) + ":" +
                        std::to_string(order[static_cast<size_t>(i)]));
  }
  return c;
}

}  // namespace fusor::serve
