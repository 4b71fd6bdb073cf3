// Calls a generic lambda with a typed null pointer for a runtime dtype, so reference kernels
// are written once as templates: visit_dtype(t, [&](auto* tag) { using T = ...; });
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "ir/graph.h"

namespace fusor::ref {

template <class F>
void visit_dtype(DType t, const Node& node, F&& f) {
  switch (t) {
    case DType::Float32: f(static_cast<float*>(nullptr)); return;
    case DType::Float64: f(static_cast<double*>(nullptr)); return;
    case DType::Int64: f(static_cast<int64_t*>(nullptr)); return;
    case DType::Int32: f(static_cast<int32_t*>(nullptr)); return;
    case DType::Int8: f(static_cast<int8_t*>(nullptr)); return;
    case DType::UInt8: f(static_cast<uint8_t*>(nullptr)); return;
    case DType::Bool: f(static_cast<bool*>(nullptr)); return;
    case DType::Int16: f(static_cast<int16_t*>(nullptr)); return;
    case DType::UInt16: f(static_cast<uint16_t*>(nullptr)); return;
    case DType::UInt32: f(static_cast<uint32_t*>(nullptr)); return;
    case DType::UInt64: f(static_cast<uint64_t*>(nullptr)); return;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
    case DType::Int4:
    case DType::UInt4:
    case DType::Float4E2M1:
    case DType::Float8E8M0:
    case DType::Int2:
    case DType::UInt2:
    case DType::Undefined: break;
  }
  throw Error(node.describe() + ": unsupported dtype " + dtype_name(t));
}

// Float-only variant (float32, float64) for math kernels.
template <class F>
void visit_float(DType t, const Node& node, F&& f) {
  if (t == DType::Float32) return f(static_cast<float*>(nullptr));
  if (t == DType::Float64) return f(static_cast<double*>(nullptr));
  throw Error(node.describe() + ": unsupported dtype " + dtype_name(t) + " (expects float32 or float64)");
}

template <class P> using elem_t = std::remove_pointer_t<P>;

}  // namespace fusor::ref
