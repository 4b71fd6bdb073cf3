#include "onnx/int4_packing.h"

#include <onnx/onnx_pb.h>

#include <vector>

namespace fusor {

void unpack_4bit(const uint8_t* packed, int64_t count, bool is_signed, uint8_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    uint8_t nibble = (packed[i / 2] >> (i % 2 ? 4 : 0)) & 0x0F;
    // Sign-extends bit 3 for int4: 0x8..0xF are -8..-1.
    out[i] = is_signed && (nibble & 0x08) ? static_cast<uint8_t>(nibble | 0xF0) : nibble;
  }
}

std::string pack_4bit(const uint8_t* values, int64_t count) {
  std::string bytes(packed_4bit_bytes(static_cast<uint64_t>(count)), '\0');
  for (int64_t i = 0; i < count; ++i)
    bytes[i / 2] = static_cast<char>(static_cast<uint8_t>(bytes[i / 2]) | ((values[i] & 0x0F) << (i % 2 ? 4 : 0)));
  return bytes;
}

Tensor tensor_4bit_from_proto(const onnx::TensorProto& p, DType dtype, const Dims& dims, uint64_t count,
                              bool raw, const std::string& bytes) {
  const uint64_t need = packed_4bit_bytes(count);
  std::string packed;
  if (raw) {
    packed = bytes;
  } else {
    packed.reserve(p.int32_data_size());
    for (int32_t v : p.int32_data()) packed.push_back(static_cast<char>(v & 0xFF));
  }
  if (packed.size() != need)
    throw Error("tensor '" + p.name() + "' has " + std::to_string(packed.size()) + " bytes of packed 4-bit data but its shape " +
                dims_to_string(dims) + " needs " + std::to_string(need));
  Tensor t(dtype, dims);
  unpack_4bit(reinterpret_cast<const uint8_t*>(packed.data()), static_cast<int64_t>(count), dtype == DType::Int4,
              static_cast<uint8_t*>(t.raw()));
  return t;
}

}  // namespace fusor
