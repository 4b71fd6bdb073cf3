#include "serve/classification.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "serve/status.h"

namespace fusor::serve {
namespace {

// As Triton: float32, float64 and every integer type (float16 and bool are not classified).
bool classifiable(DType d) {
  switch (d) {
    case DType::Float32: case DType::Float64:
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
      return true;
    default:
      return false;
  }
}

// A score as Triton prints it: floats with six decimals ("0.875000"), integers as integers
// ("100", not "100.000000"), read in their own type (an int64 above 2^53 is exact).
std::string score_text(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Int8: return std::to_string(t.data<int8_t>()[i]);
    case DType::Int16: return std::to_string(t.data<int16_t>()[i]);
    case DType::Int32: return std::to_string(t.data<int32_t>()[i]);
    case DType::Int64: return std::to_string(t.data<int64_t>()[i]);
    case DType::UInt8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::UInt16: return std::to_string(t.data<uint16_t>()[i]);
    case DType::UInt32: return std::to_string(t.data<uint32_t>()[i]);
    case DType::UInt64: return std::to_string(t.data<uint64_t>()[i]);
    default: return std::to_string(t.scalar_as_double(i));
  }
}

void check_classes(DType dtype, int64_t k, const std::string& output) {
  if (k < 1) throw RequestError{Code::BadRequest, "output '" + output + "': 'classification' must be 1 or more"};
  if (!classifiable(dtype))
    throw RequestError{Code::BadRequest, "output '" + output + "' is " + dtype_name(dtype) +
                                             ": only float32, float64 and integer outputs can be classified"};
}

}  // namespace

void check_requested_output(const Signature& sig, const std::string& output, int64_t classes) {
  auto it = std::find_if(sig.outputs.begin(), sig.outputs.end(), [&](const TensorInfo& o) { return o.name == output; });
  if (it == sig.outputs.end()) throw RequestError{Code::BadRequest, "unknown output '" + output + "' requested"};
  if (classes > 0) check_classes(it->dtype, classes, output);
}

Classes classify(const Tensor& scores, int64_t k, bool batched, const std::string& output) {
  check_classes(scores.dtype(), k, output);
  const int64_t rows = batched && scores.rank() > 0 ? scores.dims()[0] : 1;
  const int64_t per_row = rows ? scores.numel() / rows : 0;
  k = std::min(k, per_row);
  Classes c;
  c.dims = batched ? Dims{rows, k} : Dims{k};
  std::vector<int64_t> order(static_cast<size_t>(per_row));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * per_row;
    std::iota(order.begin(), order.end(), 0);
    // Largest first, NaN last (a strict order even then); equal values in index order. 64-bit
    // integers compare in their own type, as Triton sorts them: 2^53 + 1 is above 2^53.
    auto key = [&](int64_t i) {
      const double v = scores.scalar_as_double(base + i);
      return std::isnan(v) ? -std::numeric_limits<double>::infinity() : v;
    };
    auto before = [&](int64_t a, int64_t b) {
      if (scores.dtype() == DType::Int64 || scores.dtype() == DType::UInt64) {
        const bool is_signed = scores.dtype() == DType::Int64;
        const auto* i64 = static_cast<const int64_t*>(scores.raw()) + base;
        const auto* u64 = static_cast<const uint64_t*>(scores.raw()) + base;
        if (is_signed ? i64[a] != i64[b] : u64[a] != u64[b]) return is_signed ? i64[a] > i64[b] : u64[a] > u64[b];
        return a < b;
      }
      const double va = key(a), vb = key(b);
      return va > vb || (va == vb && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int64_t i = 0; i < k; ++i)
      c.items.push_back(score_text(scores, base + order[static_cast<size_t>(i)]) + ":" +
                        std::to_string(order[static_cast<size_t>(i)]));
  }
  return c;
}

}  // namespace fusor::serve
