#include "serve/tensor_codec.h"

#include <cstring>

#include "serve/signature.h"
#include "serve/status.h"

namespace fusor::serve {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 31;

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

template <class T, class V>
void store(Tensor& t, const std::vector<V>& values) {
  T* out = static_cast<T*>(t.raw());
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
}

template <class V>
Tensor from_values(const WireTensor& w, const std::vector<V>& values) {
  Tensor t = allocate(w);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw bad("input '" + w.name + "' has " + std::to_string(values.size()) + " values; shape " +
              shape_string(w.shape) + " needs " + std::to_string(t.numel()));
  switch (t.dtype()) {
    case DType::Float32: store<float>(t, values); break;
    case DType::Float64: store<double>(t, values); break;
    case DType::Int64: store<int64_t>(t, values); break;
    case DType::Int32: store<int32_t>(t, values); break;
    case DType::Int8: store<int8_t>(t, values); break;
    case DType::UInt8: store<uint8_t>(t, values); break;
    case DType::Bool: store<bool>(t, values); break;
    case DType::Undefined: break;
  }
  return t;
}

}  // namespace

Tensor allocate(const WireTensor& w) {
  DType t = dtype_from_triton(w.datatype);
  if (t == DType::Undefined) throw bad("input '" + w.name + "' has unsupported datatype '" + w.datatype + "'");
  int64_t n = 1;
  for (int64_t d : w.shape) {
    if (d < 0) throw bad("input '" + w.name + "' has a negative dimension in shape " + shape_string(w.shape));
    if (d > kMaxElements || (n *= d) > kMaxElements)
      throw bad("input '" + w.name + "' shape " + shape_string(w.shape) + " is too large");
  }
  return Tensor(t, Dims(w.shape.begin(), w.shape.end()));
}

Tensor from_raw(const WireTensor& w, const void* data, size_t bytes) {
  Tensor t = allocate(w);
  if (bytes != t.nbytes())
    throw bad("input '" + w.name + "' has " + std::to_string(bytes) + " bytes of data; " + w.datatype + " " +
              shape_string(w.shape) + " needs " + std::to_string(t.nbytes()));
  if (bytes) std::memcpy(t.raw(), data, bytes);
  return t;
}

Tensor from_doubles(const WireTensor& w, const std::vector<double>& values) { return from_values(w, values); }
Tensor from_int64s(const WireTensor& w, const std::vector<int64_t>& values) { return from_values(w, values); }

}  // namespace fusor::serve
