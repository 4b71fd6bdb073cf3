#include "onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "onnx/dtype_codes.h"
#include "onnx/subbyte_packing.h"

namespace fusor {
namespace {

// An external_data number (offset, length): decimal digits only, as ONNX writes them.
int64_t external_number(const onnx::TensorProto& p, const std::string& key, const std::string& text) {
  int64_t n = 0;
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  for (size_t i = 0; digits && i < text.size() && n >= 0; ++i)
    n = n > (INT64_MAX - (text[i] - '0')) / 10 ? -1 : n * 10 + (text[i] - '0');
  if (!digits || n < 0)
    throw Error("tensor '" + p.name() + "': external data " + key + " '" + text + "' is not a non-negative integer");
  return n;
}

// The `need` bytes of a tensor stored in a file of the model's folder. Everything is checked
// before anything is allocated or read: a directory "opened" and read as zeros, a FIFO blocked
// forever, and a 3 GB file with no length was read whole before its size was compared.
std::string read_external(const onnx::TensorProto& p, const std::string& base_dir, uint64_t need) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = external_number(p, "offset", kv.value());
    else if (kv.key() == "length") length = external_number(p, "length", kv.value());
  }
  namespace fs = std::filesystem;
  if (location.empty()) throw Error("tensor '" + p.name() + "': external data has no location");
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir));
  fs::path file = fs::weakly_canonical(base / location);
  auto rel = file.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..")
    throw Error("tensor '" + p.name() + "': external data location '" + location + "' is outside the model folder");
  std::error_code ec;
  if (!fs::exists(file, ec)) throw Error("tensor '" + p.name() + "': cannot open external data file " + file.string());
  if (!fs::is_regular_file(file, ec))
    throw Error("tensor '" + p.name() + "': external data location '" + location + "' is not a regular file");
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) throw Error("tensor '" + p.name() + "': cannot read external data file " + file.string());
  if (static_cast<uintmax_t>(offset) > size || (length >= 0 && static_cast<uintmax_t>(length) > size - offset))
    throw Error("tensor '" + p.name() + "': external data range is outside file " + file.string());
  if (length < 0) length = static_cast<int64_t>(size - offset);  // to the end of the file
  if (static_cast<uint64_t>(length) != need)
    throw Error("tensor '" + p.name() + "' has " + std::to_string(length) + " bytes of external data but its shape " +
                dims_to_string(Dims(p.dims().begin(), p.dims().end())) + " needs " + std::to_string(need));
  std::ifstream f(file, std::ios::binary);
  std::string bytes(static_cast<size_t>(length), '\0');
  if (!f || !f.seekg(offset) || !f.read(bytes.data(), length))
    throw Error("tensor '" + p.name() + "': cannot read " + std::to_string(length) + " bytes of external data from " +
                file.string());
  return bytes;
}

template <class Dst, class Src>
void copy_field(const Src& field, Tensor& t, const std::string& name) {
  if (static_cast<int64_t>(field.size()) != t.numel())
    throw Error("tensor '" + name + "' has " + std::to_string(field.size()) + " values but its shape " +
                dims_to_string(t.dims()) + " needs " + std::to_string(t.numel()));
  Dst* out = static_cast<Dst*>(t.raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  DType dtype = dtype_from_onnx(p.data_type());
  if (dtype == DType::Undefined)
    throw Error("tensor '" + p.name() + "' has unsupported dtype " + onnx_type_name(p.data_type()),
                ErrorKind::UnsupportedOp);
  Dims dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) throw Error("tensor '" + p.name() + "' has a negative dimension");
  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  // Checked before allocating, so a corrupt shape neither overflows nor exhausts memory: raw and
  // external data must fill the shape exactly, typed fields take at least a byte per element.
  constexpr uint64_t kMaxElements = uint64_t{1} << 40;
  uint64_t count = 1;  // of the non-zero dims: the Tensor multiplies them all
  for (int64_t d : dims)
    if (d > 0) count = count > kMaxElements / static_cast<uint64_t>(d) ? kMaxElements + 1 : count * d;
  if (count > kMaxElements)
    throw Error("tensor '" + p.name() + "' has shape " + dims_to_string(dims) + ": too many elements");
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) count = 0;
  // Inline raw data is read in place: a copy of it held a second whole tensor (the largest is
  // 17 MB in llama-tiny) at the peak of every model's load.
  std::string external_bytes;
  if (external) external_bytes = read_external(p, base_dir, is_packed(dtype) ? packed_bytes(count, packed_bits(dtype)) : count * dtype_size(dtype));
  const std::string& bytes = external ? external_bytes : p.raw_data();
  const bool raw = external || p.has_raw_data();
  if (is_packed(dtype)) return packed_tensor_from_proto(p, dtype, dims, count, raw, bytes);  // packed in files
  if (raw && count * dtype_size(dtype) != bytes.size())
    throw Error("tensor '" + p.name() + "' has " + std::to_string(bytes.size()) + " bytes of data but its shape " +
                dims_to_string(dims) + " needs " + std::to_string(count * dtype_size(dtype)));
  if (!raw && count > p.ByteSizeLong())
    throw Error("tensor '" + p.name() + "' has shape " + dims_to_string(dims) + " but not the data for it");
  Tensor t(dtype, dims);
  if (raw) {
    if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
    return t;
  }
  switch (dtype) {
    case DType::Float32: copy_field<float>(p.float_data(), t, p.name()); break;
    case DType::Float64: copy_field<double>(p.double_data(), t, p.name()); break;
    case DType::Int64: copy_field<int64_t>(p.int64_data(), t, p.name()); break;
    case DType::Int32: copy_field<int32_t>(p.int32_data(), t, p.name()); break;
    case DType::Int8: copy_field<int8_t>(p.int32_data(), t, p.name()); break;
    case DType::UInt8: copy_field<uint8_t>(p.int32_data(), t, p.name()); break;
    case DType::Bool: copy_field<bool>(p.int32_data(), t, p.name()); break;
    // float16 and bfloat16 keep their bit patterns in the low 16 bits of int32_data.
    case DType::Float16: case DType::BFloat16: case DType::UInt16:
      copy_field<uint16_t>(p.int32_data(), t, p.name());
      break;
    case DType::Int16: copy_field<int16_t>(p.int32_data(), t, p.name()); break;
    case DType::UInt32: copy_field<uint32_t>(p.uint64_data(), t, p.name()); break;
    case DType::UInt64: copy_field<uint64_t>(p.uint64_data(), t, p.name()); break;
    // float8 values keep their bit patterns in int32_data.
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
      copy_field<uint8_t>(p.int32_data(), t, p.name());
      break;
    case DType::Float8E8M0: copy_field<uint8_t>(p.int32_data(), t, p.name()); break;
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: case DType::Int2: case DType::UInt2: break;  // read above
    case DType::Undefined: break;
  }
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto& p) {
  p.set_data_type(dtype_to_onnx(t.dtype()));
  p.clear_dims();
  for (int64_t d : t.dims()) p.add_dims(d);
  if (is_packed(t.dtype())) p.set_raw_data(pack_bits(static_cast<const uint8_t*>(t.raw()), t.numel(), packed_bits(t.dtype())));
  else p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

}  // namespace fusor
