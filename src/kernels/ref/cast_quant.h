// Cast to and from the quantized storage types (float8, int4, uint4), which the generic Cast
// kernel does not visit: ref::cast_elements (Cast, CastLike) hands them here.
#pragma once
#include "ir/graph.h"

namespace fusor::ref {

bool is_quant_storage(DType t);

// Casts `in` into `out` (allocated, same element count) when either is a quantized storage
// type. To float8: one rounding from the value as float32 (as ONNX does), saturating past the
// largest finite value unless the node's `saturate` is 0. To int4/uint4: clamped to the range,
// then rounded half to even (ONNX's rule). From them: through float32, exact.
void cast_quant_storage(const Node& n, const Tensor& in, Tensor& out);

}  // namespace fusor::ref
