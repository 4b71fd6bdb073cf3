#include "onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "onnx/dtype_codes.h"
#include "onnx/int4_packing.h"

namespace fusor {
namespace {

std::string read_external(const onnx::TensorProto& p, const std::string& base_dir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  namespace fs = std::filesystem;
  if (location.empty()) throw Error("tensor '" + p.name() + "': external data has no location");
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir));
  fs::path file = fs::weakly_canonical(base / location);
  auto rel = file.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..")
    throw Error("tensor '" + p.name() + "': external data location '" + location + "' is outside the model folder");
  std::ifstream f(file, std::ios::binary);
  if (!f) throw Error("tensor '" + p.name() + "': cannot open external data file " + file.string());
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (offset < 0 || offset > size || (length >= 0 && offset + length > size))
    throw Error("tensor '" + p.name() + "': external data range is outside file " + file.string());
  if (length < 0) length = size - offset;
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
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
  if (external) external_bytes = read_external(p, base_dir);
  const std::string& bytes = external ? external_bytes : p.raw_data();
  const bool raw = external || p.has_raw_data();
  if (is_4bit(dtype)) return tensor_4bit_from_proto(p, dtype, dims, count, raw, bytes);  // packed in files
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
    case DType::Int4: case DType::UInt4: break;  // read above
    case DType::Undefined: break;
  }
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto& p) {
  p.set_data_type(dtype_to_onnx(t.dtype()));
  p.clear_dims();
  for (int64_t d : t.dims()) p.add_dims(d);
  if (is_4bit(t.dtype())) p.set_raw_data(pack_4bit(static_cast<const uint8_t*>(t.raw()), t.numel()));
  else p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

}  // namespace fusor
