// Request tensors from the wire, shared by HTTP and gRPC: a declared name, datatype and shape
// plus raw little-endian bytes (Triton's binary extension, gRPC raw_input_contents) or typed
// values (JSON "data", gRPC contents). Every check throws RequestError (400); nothing here trusts
// a declared size before comparing it with what arrived.
#pragma once
#include <string>
#include <vector>

#include "fusor/tensor.h"

namespace fusor::serve {

struct WireTensor {
  std::string name, datatype;
  std::vector<int64_t> shape;
};

// Validates datatype and shape; returns a zeroed tensor of that type and shape.
Tensor allocate(const WireTensor& w);
Tensor from_raw(const WireTensor& w, const void* data, size_t bytes);
// Values given one by one: `values[i]` read as double (exact for ints up to 2^53) or as int64.
Tensor from_doubles(const WireTensor& w, const std::vector<double>& values);
Tensor from_int64s(const WireTensor& w, const std::vector<int64_t>& values);

}  // namespace fusor::serve
