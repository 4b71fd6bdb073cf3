#include "kernels/ref/cast_quant.h"

#include <algorithm>
#include <cmath>

#include "ir/float8.h"
#include "ir/mx_formats.h"
#include "ir/shape_util.h"
#include "kernels/ref/cast.h"

namespace fusor::ref {

bool is_quant_storage(DType t) {
  return is_float8(t) || t == DType::Int4 || t == DType::UInt4 || t == DType::Int2 || t == DType::UInt2 ||
         t == DType::Float4E2M1 || t == DType::Float8E8M0;
}

namespace {

E8M0Rounding e8m0_rounding(const Node& n) {
  const std::string mode = n.attr_string("round_mode", "up");
  if (mode == "up") return E8M0Rounding::Up;
  if (mode == "down") return E8M0Rounding::Down;
  if (mode == "nearest") return E8M0Rounding::Nearest;
  fail(n, "round_mode must be 'up', 'down' or 'nearest', got '" + mode + "'");
}

// A float as int4, uint4, int2 or uint2: truncated toward zero and wrapped to the type's bits
// (two's complement), as ONNX's reference (ml_dtypes) converts; NaN and infinities become 0.
// The spec leaves an out-of-range value undefined.
uint8_t to_narrow_integer(double v, DType to) {
  const int bits = to == DType::Int4 || to == DType::UInt4 ? 4 : 2;
  if (!std::isfinite(v)) return 0;
  const auto wrapped = static_cast<uint8_t>(static_cast<int64_t>(std::fmod(std::trunc(v), 256.0)) & ((1 << bits) - 1));
  const bool is_signed = to == DType::Int4 || to == DType::Int2;
  return is_signed && (wrapped >> (bits - 1)) ? static_cast<uint8_t>(wrapped | (0xFF << bits)) : wrapped;
}

}  // namespace

void cast_quant_storage(const Node& n, const Tensor& in, Tensor& out) {
  if (in.numel() != out.numel())
    fail(n, "cast of " + std::to_string(in.numel()) + " elements into " + std::to_string(out.numel()));
  const DType to = out.dtype();
  if (!is_quant_storage(to)) {
    // Every value of these types is exact in float32; the generic Cast takes it from there.
    Tensor wide(DType::Float32, in.dims());
    for (int64_t i = 0; i < in.numel(); ++i) wide.data<float>()[i] = static_cast<float>(in.scalar_as_double(i));
    cast_elements(n, wide, out);
    return;
  }
  auto* y = static_cast<uint8_t*>(out.raw());
  const bool saturate = n.attr_int("saturate", 1) != 0;
  auto each = [&](auto convert) {
    for (int64_t i = 0; i < in.numel(); ++i) y[i] = convert(in.scalar_as_double(i));
  };
  if (is_float8(to)) {
    const Float8Format f = float8_format(to);
    each([&](double v) { return float_to_float8(static_cast<float>(v), f, saturate); });
  } else if (to == DType::Float4E2M1) {
    each([](double v) { return float_to_float4e2m1(static_cast<float>(v)); });
  } else if (to == DType::Float8E8M0) {
    const E8M0Rounding rounding = e8m0_rounding(n);
    each([&](double v) { return float_to_float8e8m0(static_cast<float>(v), rounding, saturate); });
  } else {
    each([&](double v) { return to_narrow_integer(v, to); });
  }
}

}  // namespace fusor::ref
