// Input checks that several op families' shape functions share: a required input is present,
// an index-like input is int64 or int32. Each fails naming the node.
#pragma once
#include <cstddef>

#include "ir/op_table.h"

namespace fusor {

void require_input(const InferContext& ctx, size_t i, const char* what);
void require_int_dtype(const InferContext& ctx, size_t i, const char* what);

}  // namespace fusor
