#include "onnx/dtype_codes.h"

#include <onnx/onnx_pb.h>

#include <cctype>

namespace fusor {
namespace {
// TensorProto codes newer than the onnx headers fusor may build against (float8: onnx 1.14,
// int4/uint4: onnx 1.16).
constexpr int kFloat8E4M3FN = 17, kFloat8E4M3FNUZ = 18, kFloat8E5M2 = 19, kFloat8E5M2FNUZ = 20, kUInt4 = 21,
              kInt4 = 22, kFloat4E2M1 = 23, kFloat8E8M0 = 24, kUInt2 = 25, kInt2 = 26;
}  // namespace

DType dtype_from_onnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::Float32;
    case onnx::TensorProto::DOUBLE: return DType::Float64;
    case onnx::TensorProto::INT64: return DType::Int64;
    case onnx::TensorProto::INT32: return DType::Int32;
    case onnx::TensorProto::INT8: return DType::Int8;
    case onnx::TensorProto::UINT8: return DType::UInt8;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::FLOAT16: return DType::Float16;
    case onnx::TensorProto::BFLOAT16: return DType::BFloat16;
    case onnx::TensorProto::INT16: return DType::Int16;
    case onnx::TensorProto::UINT16: return DType::UInt16;
    case onnx::TensorProto::UINT32: return DType::UInt32;
    case onnx::TensorProto::UINT64: return DType::UInt64;
    case kFloat8E4M3FN: return DType::Float8E4M3FN;
    case kFloat8E4M3FNUZ: return DType::Float8E4M3FNUZ;
    case kFloat8E5M2: return DType::Float8E5M2;
    case kFloat8E5M2FNUZ: return DType::Float8E5M2FNUZ;
    case kUInt4: return DType::UInt4;
    case kInt4: return DType::Int4;
    case kFloat4E2M1: return DType::Float4E2M1;
    case kFloat8E8M0: return DType::Float8E8M0;
    case kUInt2: return DType::UInt2;
    case kInt2: return DType::Int2;
    default: return DType::Undefined;
  }
}

int dtype_to_onnx(DType t) {
  switch (t) {
    case DType::Float32: return onnx::TensorProto::FLOAT;
    case DType::Float64: return onnx::TensorProto::DOUBLE;
    case DType::Int64: return onnx::TensorProto::INT64;
    case DType::Int32: return onnx::TensorProto::INT32;
    case DType::Int8: return onnx::TensorProto::INT8;
    case DType::UInt8: return onnx::TensorProto::UINT8;
    case DType::Bool: return onnx::TensorProto::BOOL;
    case DType::Float16: return onnx::TensorProto::FLOAT16;
    case DType::BFloat16: return onnx::TensorProto::BFLOAT16;
    case DType::Int16: return onnx::TensorProto::INT16;
    case DType::UInt16: return onnx::TensorProto::UINT16;
    case DType::UInt32: return onnx::TensorProto::UINT32;
    case DType::UInt64: return onnx::TensorProto::UINT64;
    case DType::Float8E4M3FN: return kFloat8E4M3FN;
    case DType::Float8E4M3FNUZ: return kFloat8E4M3FNUZ;
    case DType::Float8E5M2: return kFloat8E5M2;
    case DType::Float8E5M2FNUZ: return kFloat8E5M2FNUZ;
    case DType::UInt4: return kUInt4;
    case DType::Int4: return kInt4;
    case DType::Float4E2M1: return kFloat4E2M1;
    case DType::Float8E8M0: return kFloat8E8M0;
    case DType::UInt2: return kUInt2;
    case DType::Int2: return kInt2;
    case DType::Undefined: return onnx::TensorProto::UNDEFINED;
  }
  return onnx::TensorProto::UNDEFINED;
}

std::string onnx_type_name(int t) {
  if (DType d = dtype_from_onnx(t); d != DType::Undefined) return dtype_name(d);
  if (onnx::TensorProto_DataType_IsValid(t)) {
    std::string n = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
    for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return n;
  }
  return "type#" + std::to_string(t);
}

}  // namespace fusor
