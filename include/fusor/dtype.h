// Element types fusor computes with. Float64 exists for the float64 "truth" executor.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fusor {

// Float16 and BFloat16 are storage types: ops compute them in float32 and round the results.
// The float8 types and Int4/UInt4 are storage for quantized values: one byte per element in
// memory (Int4/UInt4 unpacked, packed two to a byte only in ONNX files).
enum class DType : uint8_t {
  Undefined, Float32, Float64, Int64, Int32, Int8, UInt8, Bool,
  Float16, BFloat16, Int16, UInt16, UInt32, UInt64,
  Float8E4M3FN, Float8E4M3FNUZ, Float8E5M2, Float8E5M2FNUZ, Int4, UInt4,
  Float4E2M1, Float8E8M0, Int2, UInt2
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "int64", ...

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }
// Float16 and BFloat16 have no C++ element type: kernels compute them in float32.

}  // namespace fusor
