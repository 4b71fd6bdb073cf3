#include "kernels/ref/cast_quant.h"

#include <algorithm>
#include <cmath>

#include "ir/float8.h"
#include "ir/shape_util.h"
#include "kernels/ref/cast.h"

namespace fusor::ref {

bool is_quant_storage(DType t) { return is_float8(t) || t == DType::Int4 || t == DType::UInt4; }

void cast_quant_storage(const Node& n, const Tensor& in, Tensor& out) {
  if (in.numel() != out.numel())
    fail(n, "cast of " + std::to_string(in.numel()) + " elements into " + std::to_string(out.numel()));
  const DType to = out.dtype();
  if (!is_quant_storage(to)) {
    // Every float8, int4 and uint4 value is exact in float32; the generic Cast takes it from there.
    Tensor wide(DType::Float32, in.dims());
    for (int64_t i = 0; i < in.numel(); ++i) wide.data<float>()[i] = static_cast<float>(in.scalar_as_double(i));
    cast_elements(n, wide, out);
    return;
  }
  auto* y = static_cast<uint8_t*>(out.raw());
  if (is_float8(to)) {
    const Float8Format f = float8_format(to);
    const bool saturate = n.attr_int("saturate", 1) != 0;
    for (int64_t i = 0; i < in.numel(); ++i) y[i] = float_to_float8(static_cast<float>(in.scalar_as_double(i)), f, saturate);
    return;
  }
  // int4/uint4 as ONNX's reference does: the value as float32, clamped to the type's range, then
  // rounded half to even (NaN becomes 0).
  const bool is_signed = to == DType::Int4;
  const float lo = is_signed ? -8.0f : 0.0f, hi = is_signed ? 7.0f : 15.0f;
  for (int64_t i = 0; i < in.numel(); ++i) {
    const auto v = static_cast<float>(in.scalar_as_double(i));
    y[i] = static_cast<uint8_t>(static_cast<int8_t>(std::isnan(v) ? 0.0f : std::nearbyint(std::clamp(v, lo, hi))));
  }
}

}  // namespace fusor::ref
