// Element conversion between any two dtypes, with Cast's semantics: the Cast kernel, and CastLike
// (whose target type comes from a tensor) and the storage-type pass's casts use it.
#pragma once
#include "ir/graph.h"

namespace fusor::ref {

// Converts every element of `in` into `out` (same element count). Float to integer truncates
// toward zero like numpy; anything to bool is "x != 0"; to float16 and bfloat16 rounds to
// nearest even and overflows to inf (ir/half.h).
void cast_elements(const Node& node, const Tensor& in, Tensor& out);

}  // namespace fusor::ref
