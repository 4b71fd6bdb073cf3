// int4 and uint4 in ONNX files: two elements to a byte, the first in the low nibble (an odd
// count leaves the last high nibble zero). In memory fusor keeps one element per byte, int4
// sign-extended to int8 and uint4 as uint8.
#pragma once
#include <cstdint>
#include <string>

#include "fusor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace fusor {

inline bool is_4bit(DType t) { return t == DType::Int4 || t == DType::UInt4; }

// Bytes that `count` packed 4-bit elements take.
inline uint64_t packed_4bit_bytes(uint64_t count) { return (count + 1) / 2; }

// Unpacks `count` elements from `packed` (packed_4bit_bytes(count) bytes) into `out`.
void unpack_4bit(const uint8_t* packed, int64_t count, bool is_signed, uint8_t* out);
// Packs `count` elements (their low nibbles) into packed_4bit_bytes(count) bytes.
std::string pack_4bit(const uint8_t* values, int64_t count);

// The Int4/UInt4 tensor of `p` (raw data in `bytes` when `raw`, else its int32_data, one packed
// byte per entry); throws naming the tensor when the data does not fill its shape.
Tensor tensor_4bit_from_proto(const onnx::TensorProto& p, DType dtype, const Dims& dims, uint64_t count,
                              bool raw, const std::string& bytes);

}  // namespace fusor
