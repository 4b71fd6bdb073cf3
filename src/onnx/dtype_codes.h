// ONNX element type codes (TensorProto.DataType) against fusor's DType. The importer, the
// exporter and TensorProto conversion speak the codes; everything after import speaks DType
// (an attribute that names a type, like Cast's `to`, is imported as a DType).
#pragma once
#include <string>

#include "fusor/dtype.h"

namespace fusor {

// Undefined for the types fusor does not hold (string, complex, float8, int4, ...).
DType dtype_from_onnx(int onnx_type);
int dtype_to_onnx(DType t);
// The name of a code, the unsupported ones included ("float16", "string"); "type#N" if unknown.
std::string onnx_type_name(int onnx_type);

}  // namespace fusor
