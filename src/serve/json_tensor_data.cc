#include "serve/json_tensor_data.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <utility>

#include "ir/half.h"
#include "serve/json_dom.h"
#include "serve/shortest_float.h"
#include "serve/status.h"

namespace fusor::serve {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr int kMaxDepth = 32;

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

int64_t count_values(const element& e, int depth, const WireTensor& w) {
  if (depth > kMaxDepth) throw bad("input '" + w.name + "' data is nested too deeply");
  if (e.type() != element_type::ARRAY) return 1;
  int64_t n = 0;
  for (element x : items(e)) n += count_values(x, depth + 1, w);
  return n;
}

// Walks the same elements as count_values, so `out` has room for each.
template <class T, class Read>
void fill(const element& e, T*& out, const Read& read) {
  if (e.type() == element_type::ARRAY) {
    for (element x : items(e)) fill(x, out, read);
  } else {
    *out++ = read(e);
  }
}

template <class T>
void fill_tensor(const WireTensor& w, const element& data, const Tensor& t) {
  auto wrong = [&] { return bad("input '" + w.name + "' data holds a value that is not " + w.datatype); };
  T* out = static_cast<T*>(t.raw());
  if constexpr (std::is_same_v<T, bool>) {
    fill(data, out, [&](const element& e) {
      if (e.type() != element_type::BOOL) throw wrong();
      return e.get_bool().value_unsafe();
    });
  } else if constexpr (std::is_floating_point_v<T>) {
    fill(data, out, [&](const element& e) {
      auto t = e.type();
      if (t != element_type::DOUBLE && t != element_type::INT64 && t != element_type::UINT64) throw wrong();
      return static_cast<T>(e.get_double().value_unsafe());
    });
  } else {
    // A value the type cannot hold is refused, not wrapped (2^64 - 1 read as INT64 was -1, an id
    // Gather takes as the last row); 1.0 is not an integer.
    auto out_of_range = [&](const std::string& v) {
      return bad("input '" + w.name + "' data holds " + v + ", which " + w.datatype + " cannot hold");
    };
    fill(data, out, [&](const element& e) {
      switch (e.type()) {
        case element_type::INT64: {
          const int64_t v = e.get_int64().value_unsafe();
          if (!std::in_range<T>(v)) throw out_of_range(std::to_string(v));
          return static_cast<T>(v);
        }
        case element_type::UINT64: {  // simdjson's type for values above INT64_MAX only
          const uint64_t v = e.get_uint64().value_unsafe();
          if (!std::in_range<T>(v)) throw out_of_range(std::to_string(v));
          return static_cast<T>(v);
        }
        default: throw wrong();
      }
    });
  }
}

// float16 and bfloat16 from JSON numbers, rounded to nearest even.
void fill_storage(const WireTensor& w, const element& data, const Tensor& t) {
  auto wrong = [&] { return bad("input '" + w.name + "' data holds a value that is not " + w.datatype); };
  auto* out = static_cast<uint16_t*>(t.raw());
  const bool half = t.dtype() == DType::Float16;
  fill(data, out, [&](const element& e) {
    auto k = e.type();
    if (k != element_type::DOUBLE && k != element_type::INT64 && k != element_type::UINT64) throw wrong();
    double x = e.get_double().value_unsafe();
    return half ? float_to_half(x) : float_to_bfloat16(x);
  });
}

// The longest text one value prints as: "-2.2250738585072014e-308".
constexpr size_t kMaxValueChars = 26;
// The room put() needs past its start (shortest_float writes whole words past a float's text).
constexpr size_t kRoomPerValue = std::max(kMaxValueChars, shortest_float_detail::kRoom);

template <class T>
char* put(char* p, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? std::copy_n("true", 4, p) : std::copy_n("false", 5, p);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) return std::copy_n("null", 4, p);
    // JSON clients read numbers as doubles, then round to float32. For one float (and its
    // negative) that double rounding lands on the neighbour of the shortest text's float:
    // 7.038531e-26 (checked over all 2^32 floats). Its exact double's text reads back right.
    if constexpr (std::is_same_v<T, float>)
      if ((std::bit_cast<uint32_t>(v) & 0x7fffffffu) == 0x15ae43fdu) return put(p, static_cast<double>(v));
    char* end = nullptr;
    if constexpr (std::is_same_v<T, float>) end = shortest_float(p, v);
    else end = std::to_chars(p, p + kMaxValueChars, v).ptr;
    for (char* c = p; c < end; ++c)
      if (*c == '.' || *c == 'e') return end;
    *end++ = '.';
    *end++ = '0';
    return end;
  } else {
    return std::to_chars(p, p + kMaxValueChars, v).ptr;
  }
}

// float16 and bfloat16 print as the float32 they widen to, whose shortest text reads back to
// the same bits.
struct Widened {
  const uint16_t* bits;
  bool half;
  float operator[](int64_t i) const { return half ? half_to_float(bits[i]) : bfloat16_to_float(bits[i]); }
};

// Prints through a small buffer that stays in L1, so the body is written once, by append.
template <class Values>
void append_values(std::string& out, const Values& v, int64_t n) {
  char buf[16384];
  char* p = buf;
  out.push_back('[');
  for (int64_t i = 0; i < n; ++i) {
    if (p + 1 + kRoomPerValue > buf + sizeof buf) {
      out.append(buf, p);
      p = buf;
    }
    if (i) *p++ = ',';
    p = put(p, v[i]);
  }
  out.append(buf, p);
  out.push_back(']');
}

// The most characters one value of `t` takes with its comma ("-1234567800000.0,"), so one
// reserve serves the whole array. Pages never written are never touched.
size_t max_chars(DType t) {
  switch (t) {
    case DType::Float32: return 18;
    case DType::Float64: return kMaxValueChars + 1;
    case DType::Int64: return 21;
    case DType::Int32: return 12;
    case DType::Int8: return 5;
    case DType::UInt8: return 4;
    case DType::Bool: return 6;
    case DType::Float16: case DType::BFloat16: return 18;
    case DType::Int16: return 7;
    case DType::UInt16: return 6;
    case DType::UInt32: return 11;
    case DType::UInt64: return 21;
    default: break;  // no KServe datatype (see append_tensor_data)
  }
  return 0;
}

}  // namespace

Tensor decode_tensor_data(const WireTensor& w, const element& data) {
  Tensor t = allocate(w, count_values(data, 0, w));
  switch (t.dtype()) {
    case DType::Float32: fill_tensor<float>(w, data, t); break;
    case DType::Float64: fill_tensor<double>(w, data, t); break;
    case DType::Int64: fill_tensor<int64_t>(w, data, t); break;
    case DType::Int32: fill_tensor<int32_t>(w, data, t); break;
    case DType::Int8: fill_tensor<int8_t>(w, data, t); break;
    case DType::UInt8: fill_tensor<uint8_t>(w, data, t); break;
    case DType::Bool: fill_tensor<bool>(w, data, t); break;
    case DType::Float16: case DType::BFloat16: fill_storage(w, data, t); break;
    case DType::Int16: fill_tensor<int16_t>(w, data, t); break;
    case DType::UInt16: fill_tensor<uint16_t>(w, data, t); break;
    case DType::UInt32: fill_tensor<uint32_t>(w, data, t); break;
    case DType::UInt64: fill_tensor<uint64_t>(w, data, t); break;
    default: break;  // a wire tensor has a KServe datatype
  }
  return t;
}

void append_tensor_data(std::string& out, const Tensor& t) {
  const void* p = t.raw();
  int64_t n = t.numel();
  out.reserve(out.size() + static_cast<size_t>(n) * max_chars(t.dtype()) + 2);
  switch (t.dtype()) {
    case DType::Float32: append_values(out, static_cast<const float*>(p), n); break;
    case DType::Float64: append_values(out, static_cast<const double*>(p), n); break;
    case DType::Int64: append_values(out, static_cast<const int64_t*>(p), n); break;
    case DType::Int32: append_values(out, static_cast<const int32_t*>(p), n); break;
    case DType::Int8: append_values(out, static_cast<const int8_t*>(p), n); break;
    case DType::UInt8: append_values(out, static_cast<const uint8_t*>(p), n); break;
    case DType::Bool: append_values(out, static_cast<const bool*>(p), n); break;
    case DType::Float16: case DType::BFloat16:
      append_values(out, Widened{static_cast<const uint16_t*>(p), t.dtype() == DType::Float16}, n);
      break;
    case DType::Int16: append_values(out, static_cast<const int16_t*>(p), n); break;
    case DType::UInt16: append_values(out, static_cast<const uint16_t*>(p), n); break;
    case DType::UInt32: append_values(out, static_cast<const uint32_t*>(p), n); break;
    case DType::UInt64: append_values(out, static_cast<const uint64_t*>(p), n); break;
    case DType::Undefined: out += "[]"; break;
    default:  // fusor serve refuses at start a model with tensors KServe has no datatype for
      throw RequestError{Code::Internal, std::string("a ") + dtype_name(t.dtype()) + " tensor has no KServe datatype"};
  }
}

}  // namespace fusor::serve
