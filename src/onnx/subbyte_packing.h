// Element types narrower than a byte in ONNX files: int4, uint4 and float4e2m1 two to a byte,
// int2 and uint2 four to a byte, the first element in the lowest bits (a partial last byte leaves
// its high bits zero). In memory fusor keeps one element per byte: int4 and int2 sign-extended
// to int8, uint4 and uint2 as uint8, float4e2m1 as its 4-bit code.
#pragma once
#include <cstdint>
#include <string>

#include "fusor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace fusor {

// Bits per element in a file: 4 or 2 for the packed types, 0 for the others.
inline int packed_bits(DType t) {
  switch (t) {
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: return 4;
    case DType::Int2: case DType::UInt2: return 2;
    default: return 0;
  }
}
inline bool is_packed(DType t) { return packed_bits(t) != 0; }

// Bytes that `count` packed elements of `bits` bits take.
inline uint64_t packed_bytes(uint64_t count, int bits) { return (count * static_cast<uint64_t>(bits) + 7) / 8; }

// Unpacks `count` elements of `bits` bits from `packed` into `out`, one per byte, sign-extending
// when `is_signed`.
void unpack_bits(const uint8_t* packed, int64_t count, int bits, bool is_signed, uint8_t* out);
// Packs `count` elements (their low `bits` bits) into packed_bytes(count, bits) bytes.
std::string pack_bits(const uint8_t* values, int64_t count, int bits);

// The packed-type tensor of `p` (raw data in `bytes` when `raw`, else its int32_data, one
// packed byte per entry); throws naming the tensor when the data does not fill its shape.
Tensor packed_tensor_from_proto(const onnx::TensorProto& p, DType dtype, const Dims& dims, uint64_t count, bool raw,
                                const std::string& bytes);

}  // namespace fusor
