#include "serve/tensor_codec.h"

#include <cstring>

#include "ir/half.h"

#include "serve/signature.h"
#include "serve/status.h"

namespace fusor::serve {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 31;

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

template <class T, class V>
void store(const Tensor& t, std::span<const V> values) {
  T* out = static_cast<T*>(t.raw());
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
}

// float16 and bfloat16 from numbers: rounded to nearest even.
template <class V>
void store_storage(const Tensor& t, std::span<const V> values) {
  auto* out = static_cast<uint16_t*>(t.raw());
  const bool half = t.dtype() == DType::Float16;
  for (size_t i = 0; i < values.size(); ++i) {
    double x = static_cast<double>(values[i]);
    out[i] = half ? float_to_half(x) : float_to_bfloat16(x);
  }
}

// Validates datatype and shape; returns the element count.
int64_t checked_numel(const WireTensor& w, DType& t) {
  t = dtype_from_triton(w.datatype);
  if (t == DType::Undefined) throw bad("input '" + w.name + "' has unsupported datatype '" + w.datatype + "'");
  int64_t n = 1;
  for (int64_t d : w.shape) {
    if (d < 0) throw bad("input '" + w.name + "' has a negative dimension in shape " + shape_string(w.shape));
    if (d > kMaxElements || (n *= d) > kMaxElements)
      throw bad("input '" + w.name + "' shape " + shape_string(w.shape) + " is too large");
  }
  return n;
}

}  // namespace

Tensor allocate(const WireTensor& w, int64_t values) {
  DType t;
  int64_t n = checked_numel(w, t);
  if (values != n)
    throw bad("input '" + w.name + "' has " + std::to_string(values) + " values; shape " + shape_string(w.shape) +
              " needs " + std::to_string(n));
  return Tensor(t, Dims(w.shape.begin(), w.shape.end()));
}

Tensor from_raw(const WireTensor& w, const void* data, size_t bytes) {
  DType t;
  size_t needed = static_cast<size_t>(checked_numel(w, t)) * dtype_size(t);
  if (bytes != needed)
    throw bad("input '" + w.name + "' has " + std::to_string(bytes) + " bytes of data; " + w.datatype + " " +
              shape_string(w.shape) + " needs " + std::to_string(needed));
  Tensor out(t, Dims(w.shape.begin(), w.shape.end()));
  if (bytes) std::memcpy(out.raw(), data, bytes);
  return out;
}

template <class V>
Tensor from_values(const WireTensor& w, std::span<const V> values) {
  Tensor t = allocate(w, static_cast<int64_t>(values.size()));
  switch (t.dtype()) {
    case DType::Float32: store<float>(t, values); break;
    case DType::Float64: store<double>(t, values); break;
    case DType::Int64: store<int64_t>(t, values); break;
    case DType::Int32: store<int32_t>(t, values); break;
    case DType::Int8: store<int8_t>(t, values); break;
    case DType::UInt8: store<uint8_t>(t, values); break;
    case DType::Bool: store<bool>(t, values); break;
    case DType::Float16: case DType::BFloat16: store_storage(t, values); break;
    case DType::Int16: store<int16_t>(t, values); break;
    case DType::UInt16: store<uint16_t>(t, values); break;
    case DType::UInt32: store<uint32_t>(t, values); break;
    case DType::UInt64: store<uint64_t>(t, values); break;
    case DType::Undefined: break;
  }
  return t;
}

template Tensor from_values(const WireTensor&, std::span<const int64_t>);
template Tensor from_values(const WireTensor&, std::span<const int32_t>);
template Tensor from_values(const WireTensor&, std::span<const uint32_t>);
template Tensor from_values(const WireTensor&, std::span<const uint64_t>);
template Tensor from_values(const WireTensor&, std::span<const float>);
template Tensor from_values(const WireTensor&, std::span<const double>);
template Tensor from_values(const WireTensor&, std::span<const bool>);

}  // namespace fusor::serve
