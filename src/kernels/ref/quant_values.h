// Helpers shared by the quantization reference kernels: reading any tensor's elements as
// doubles (exact for every quantized type), the integer range of a quantized type, and storing
// a value already rounded and clamped into that type's one-byte or two-byte element.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "fusor/tensor.h"

namespace fusor::ref {

inline std::vector<double> values_as_double(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.scalar_as_double(i);
  return v;
}

// [min, max] of an integer quantized type (int4, uint4, int2 and uint2 kept one per byte).
inline std::pair<double, double> quant_range(DType t) {
  switch (t) {
    case DType::Int8: return {-128, 127};
    case DType::UInt8: return {0, 255};
    case DType::Int16: return {-32768, 32767};
    case DType::UInt16: return {0, 65535};
    case DType::Int4: return {-8, 7};
    case DType::UInt4: return {0, 15};
    case DType::Int2: return {-2, 1};
    case DType::UInt2: return {0, 3};
    case DType::Int32: return {-2147483648.0, 2147483647.0};
    default: return {0, 0};
  }
}

// Stores v (an integer within quant_range(t)) as element i of y's type t.
inline void store_integer(Tensor& y, int64_t i, double v) {
  void* p = y.raw();
  switch (y.dtype()) {
    case DType::Int8: case DType::Int4: case DType::Int2: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DType::UInt8: case DType::UInt4: case DType::UInt2: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DType::Int16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DType::UInt16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DType::Int32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    default: break;
  }
}

}  // namespace fusor::ref
