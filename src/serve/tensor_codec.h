// Request tensors from the wire, shared by HTTP and gRPC: a declared name, datatype and shape
// plus raw little-endian bytes (Triton's binary extension, gRPC raw_input_contents) or typed
// values (JSON "data", gRPC contents). Every check throws RequestError (400 unless said); nothing here trusts
// a declared size before comparing it with what arrived, and nothing is allocated before then.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "fusor/tensor.h"
#include "serve/status.h"

namespace fusor::serve {

struct WireTensor {
  std::string name, datatype;
  std::vector<int64_t> shape;
};

// Validates datatype and shape, then that `values` values fill that shape; returns a zeroed
// tensor of that type and shape for the caller to fill.
Tensor allocate(const WireTensor& w, int64_t values);
Tensor from_raw(const WireTensor& w, const void* data, size_t bytes);
// Values given one by one, each converted with static_cast to the tensor's type (int64 -> int8
// wraps, as C++ does; double -> float rounds to nearest).
// Defined for V = int64_t, int32_t, uint32_t, uint64_t, float, double, bool.
template <class V>
Tensor from_values(const WireTensor& w, std::span<const V> values);

// BYTES elements in KServe's raw form: each a 4-byte little-endian length, then its bytes.
std::string bytes_contents(const std::vector<std::string>& items);
// The elements of a raw BYTES tensor; RequestError unless they are exactly its shape's count.
std::vector<std::string> bytes_items(const WireTensor& w, const void* data, size_t bytes);

// Triton's shared-memory parameter on an input or output: fusor registers no regions, so such a
// tensor is refused (501) rather than read or written inline.
inline constexpr const char* kSharedMemoryRegion = "shared_memory_region";
RequestError shared_memory_refused(const std::string& name, const char* what = "input");  // "input" or "output"

}  // namespace fusor::serve
