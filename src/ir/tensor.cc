#include "fusor/tensor.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "ir/float8.h"
#include "ir/half.h"
#include "ir/mx_formats.h"

namespace fusor {
namespace {

// Tensors this large are mapped rather than allocated and cleared (below: the heap reuses its
// memory, and a request's outputs need no system call).
constexpr size_t kLazyZeroBytes = size_t{64} << 20;

}  // namespace

int64_t numel_of(const Dims& dims) {
  for (int64_t d : dims)
    if (d == 0) return 0;
  int64_t n = 1;
  // An overflowed count would allocate a few bytes for a huge shape (an input of --batch 2^62)
  // and report its outputs as computed.
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) throw Error("shape " + dims_to_string(dims) + " has too many elements");
  return n;
}

size_t nbytes_of(const Dims& dims, DType dtype) {
  constexpr uint64_t kMaxBytes = uint64_t{1} << 48;
  const uint64_t count = static_cast<uint64_t>(numel_of(dims)), width = std::max<size_t>(1, dtype_size(dtype));
  if (count > kMaxBytes / width)
    throw Error("out of memory: a " + std::string(dtype_name(dtype)) + " tensor of shape " + dims_to_string(dims) +
                " is larger than any machine's memory");
  return static_cast<size_t>(count * dtype_size(dtype));
}

size_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

std::string dims_to_string(const Dims& dims) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << ']';
  return s.str();
}

Tensor::Tensor(DType dtype, Dims dims) : dtype_(dtype), dims_(std::move(dims)) {
  for (int64_t d : dims_)
    if (d < 0) throw Error("negative dimension in tensor shape " + dims_to_string(dims_));
  const int64_t count = numel();
  if (static_cast<uint64_t>(count) > (SIZE_MAX - 63) / std::max<size_t>(1, dtype_size(dtype_)))
    throw Error("out of memory allocating a tensor of shape " + dims_to_string(dims_));
  size_t bytes = nbytes();
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  if (rounded >= kLazyZeroBytes) {
    // Mapped lazily, a tensor larger than the machine's memory was only found out when written:
    // the kernel killed the process (`fusor run --seq 2147483647` filled 48 GB of inputs on 23).
    const size_t memory = physical_memory_bytes();
    if (memory > 0 && rounded > memory)
      throw Error("out of memory: a tensor of shape " + dims_to_string(dims_) + " takes " + std::to_string(bytes) +
                  " bytes, more than this machine's " + std::to_string(memory));
    // Fresh anonymous pages read as zeros and take memory only once written: a KV cache sized
    // for a 1M-token context held 4.4 GB of written zeros to generate four tokens.
    void* m = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
    storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(m), [rounded](std::byte* q) { ::munmap(q, rounded); });
    data_ = m;
    return;
  }
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::view(DType dtype, Dims dims, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.data_ = data;
  return t;
}

Tensor Tensor::reshaped(Dims dims) const {
  if (numel_of(dims) != numel())
    throw Error("cannot reshape " + dims_to_string(dims_) + " to " + dims_to_string(dims));
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, dims_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

double Tensor::scalar_as_double(int64_t i) const {
  switch (dtype_) {
    case DType::Float32: return static_cast<const float*>(data_)[i];
    case DType::Float64: return static_cast<const double*>(data_)[i];
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(data_)[i]);
    case DType::Int32: return static_cast<const int32_t*>(data_)[i];
    case DType::Int8: return static_cast<const int8_t*>(data_)[i];
    case DType::UInt8: return static_cast<const uint8_t*>(data_)[i];
    case DType::Bool: return static_cast<const bool*>(data_)[i] ? 1.0 : 0.0;
    case DType::Float16: return half_to_float(static_cast<const uint16_t*>(data_)[i]);
    case DType::BFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(data_)[i]);
    case DType::Int16: return static_cast<const int16_t*>(data_)[i];
    case DType::UInt16: return static_cast<const uint16_t*>(data_)[i];
    case DType::UInt32: return static_cast<const uint32_t*>(data_)[i];
    case DType::UInt64: return static_cast<double>(static_cast<const uint64_t*>(data_)[i]);
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
      return float8_to_float(static_cast<const uint8_t*>(data_)[i], dtype_);
    case DType::Int4: case DType::Int2: return static_cast<const int8_t*>(data_)[i];
    case DType::UInt4: case DType::UInt2: return static_cast<const uint8_t*>(data_)[i];
    case DType::Float4E2M1: return float4e2m1_to_float(static_cast<const uint8_t*>(data_)[i]);
    case DType::Float8E8M0: return float8e8m0_to_float(static_cast<const uint8_t*>(data_)[i]);
    case DType::Undefined: break;
  }
  throw Error("scalar read of an undefined tensor");
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  if (dtype_ == DType::Int64) {
    if (!v.empty()) std::memcpy(v.data(), data_, v.size() * 8);
  } else if (dtype_ == DType::Int32) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<const int32_t*>(data_)[i];
  } else {
    throw Error(std::string("expected an int64 or int32 tensor, got ") + dtype_name(dtype_));
  }
  return v;
}

void Tensor::check_type(DType expected) const {
  if (expected != dtype_)
    throw Error(std::string("tensor is ") + dtype_name(dtype_) + ", accessed as " + dtype_name(expected));
}

}  // namespace fusor
