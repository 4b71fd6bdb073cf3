#include "serve/tensor_codec.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "ir/half.h"

#include "serve/signature.h"
#include "serve/status.h"

namespace fusor::serve {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 31;

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

template <class T, class V>
void store(const WireTensor& w, const Tensor& t, std::span<const V> values) {
  T* out = static_cast<T*>(t.raw());
  for (size_t i = 0; i < values.size(); ++i) {
    // gRPC's typed contents carry INT8 and INT16 in int32s (UINT8, UINT16 in uint32s): a value
    // the type cannot hold is refused, as over HTTP, not wrapped (300 as INT8 was 44).
    if constexpr (std::is_integral_v<T> && std::is_integral_v<V> && !std::is_same_v<T, bool> && !std::is_same_v<V, bool>)
      if (!std::in_range<T>(values[i]))
        throw bad("input '" + w.name + "' holds " + std::to_string(values[i]) + ", which " + w.datatype + " cannot hold");
    out[i] = static_cast<T>(values[i]);
  }
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

// Validates the shape; returns its element count.
int64_t element_count(const WireTensor& w) {
  int64_t n = 1;
  for (int64_t d : w.shape) {
    if (d < 0) throw bad("input '" + w.name + "' has a negative dimension in shape " + shape_string(w.shape));
    if (d > kMaxElements || (n *= d) > kMaxElements)
      throw bad("input '" + w.name + "' shape " + shape_string(w.shape) + " is too large");
  }
  return n;
}

// Validates datatype and shape; returns the element count.
int64_t checked_numel(const WireTensor& w, DType& t) {
  t = dtype_from_triton(w.datatype);
  if (t == DType::Undefined) throw bad("input '" + w.name + "' has unsupported datatype '" + w.datatype + "'");
  return element_count(w);
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
    case DType::Float32: store<float>(w, t, values); break;
    case DType::Float64: store<double>(w, t, values); break;
    case DType::Int64: store<int64_t>(w, t, values); break;
    case DType::Int32: store<int32_t>(w, t, values); break;
    case DType::Int8: store<int8_t>(w, t, values); break;
    case DType::UInt8: store<uint8_t>(w, t, values); break;
    case DType::Bool: store<bool>(w, t, values); break;
    case DType::Float16: case DType::BFloat16: store_storage(t, values); break;
    case DType::Int16: store<int16_t>(w, t, values); break;
    case DType::UInt16: store<uint16_t>(w, t, values); break;
    case DType::UInt32: store<uint32_t>(w, t, values); break;
    case DType::UInt64: store<uint64_t>(w, t, values); break;
    default: break;  // a wire tensor has a KServe datatype
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

std::string bytes_contents(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    char le[4] = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
    out.append(le, 4).append(s);
  }
  return out;
}

std::vector<std::string> bytes_items(const WireTensor& w, const void* data, size_t bytes) {
  const int64_t n = element_count(w);
  const auto* p = static_cast<const unsigned char*>(data);
  std::vector<std::string> items;
  size_t at = 0;
  while (at < bytes) {
    if (bytes - at < 4) throw bad("input '" + w.name + "': BYTES data ends inside an element's 4-byte length");
    const size_t len = p[at] | p[at + 1] << 8 | p[at + 2] << 16 | static_cast<size_t>(p[at + 3]) << 24;
    at += 4;
    if (len > bytes - at) throw bad("input '" + w.name + "': a BYTES element's length runs past the data");
    items.emplace_back(reinterpret_cast<const char*>(p + at), len);
    at += len;
  }
  if (static_cast<int64_t>(items.size()) != n)
    throw bad("input '" + w.name + "' has " + std::to_string(items.size()) + " BYTES elements; shape " +
              shape_string(w.shape) + " needs " + std::to_string(n));
  return items;
}

RequestError shared_memory_refused(const std::string& name, const char* what) {
  return {Code::Unsupported, std::string(what) + " '" + name + "' names a shared memory region: shared memory is not supported by this server"};
}

}  // namespace fusor::serve
