#include "onnx/subbyte_packing.h"

#include <onnx/onnx_pb.h>

namespace fusor {

void unpack_bits(const uint8_t* packed, int64_t count, int bits, bool is_signed, uint8_t* out) {
  const int per_byte = 8 / bits;
  const auto mask = static_cast<uint8_t>((1u << bits) - 1), sign = static_cast<uint8_t>(1u << (bits - 1));
  for (int64_t i = 0; i < count; ++i) {
    const auto v = static_cast<uint8_t>((packed[i / per_byte] >> ((i % per_byte) * bits)) & mask);
    out[i] = is_signed && (v & sign) ? static_cast<uint8_t>(v | ~mask) : v;  // 0x8..0xF are -8..-1 for int4
  }
}

std::string pack_bits(const uint8_t* values, int64_t count, int bits) {
  const int per_byte = 8 / bits;
  const auto mask = static_cast<uint8_t>((1u << bits) - 1);
  std::string bytes(packed_bytes(static_cast<uint64_t>(count), bits), '\0');
  for (int64_t i = 0; i < count; ++i)
    bytes[i / per_byte] = static_cast<char>(static_cast<uint8_t>(bytes[i / per_byte]) |
                                            ((values[i] & mask) << ((i % per_byte) * bits)));
  return bytes;
}

Tensor packed_tensor_from_proto(const onnx::TensorProto& p, DType dtype, const Dims& dims, uint64_t count, bool raw,
                                const std::string& bytes) {
  const int bits = packed_bits(dtype);
  const uint64_t need = packed_bytes(count, bits);
  std::string packed;
  if (raw) {
    packed = bytes;
  } else {
    packed.reserve(p.int32_data_size());
    for (int32_t v : p.int32_data()) packed.push_back(static_cast<char>(v & 0xFF));
  }
  if (packed.size() != need)
    throw Error("tensor '" + p.name() + "' has " + std::to_string(packed.size()) + " bytes of packed " +
                std::to_string(bits) + "-bit data but its shape " + dims_to_string(dims) + " needs " + std::to_string(need));
  Tensor t(dtype, dims);
  unpack_bits(reinterpret_cast<const uint8_t*>(packed.data()), static_cast<int64_t>(count), bits,
              dtype == DType::Int4 || dtype == DType::Int2, static_cast<uint8_t*>(t.raw()));
  return t;
}

}  // namespace fusor
