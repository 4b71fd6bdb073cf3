// A dense, row-major tensor. A Tensor is a cheap handle: copies share storage.
// Storage is 64-byte aligned. A view points at memory owned elsewhere (an arena, a caller).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fusor/dtype.h"
#include "fusor/error.h"

namespace fusor {

using Dims = std::vector<int64_t>;

int64_t numel_of(const Dims& dims);
std::string dims_to_string(const Dims& dims);  // "[1, 128, 384]"
// Bytes of a tensor of `dims` and `dtype`; throws past 2^48 (256 TiB, more than any machine holds),
// where a planner's sums of such sizes could wrap around to a small buffer.
size_t nbytes_of(const Dims& dims, DType dtype);
// This machine's physical memory in bytes; 0 when the system does not say.
size_t physical_memory_bytes();

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-filled, 64-byte aligned storage.
  Tensor(DType dtype, Dims dims);
  // A non-owning view; `data` must outlive every copy of the view.
  static Tensor view(DType dtype, Dims dims, void* data);

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(int i) const { return dims_.at(static_cast<size_t>(i < 0 ? i + static_cast<int>(dims_.size()) : i)); }
  int64_t numel() const { return numel_of(dims_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return data_; }
  template <class T> T* data() const {
    check_type(dtype_of<T>());
    return static_cast<T*>(data_);
  }

  // Same storage, new dims with the same element count.
  Tensor reshaped(Dims dims) const;
  // A deep copy with its own storage.
  Tensor clone() const;
  // Copies the first element as double, whatever the dtype (for scalars in attributes/inputs).
  double scalar_as_double(int64_t index = 0) const;
  // Reads an integer-typed (int64/int32) tensor as int64 values.
  std::vector<int64_t> to_int64_vector() const;

 private:
  void check_type(DType expected) const;

  DType dtype_ = DType::Undefined;
  Dims dims_;
  std::shared_ptr<std::byte> storage_;
  void* data_ = nullptr;
};

}  // namespace fusor
