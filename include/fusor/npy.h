// NumPy .npy files (format 1.0-3.0, little-endian, C order) <-> Tensor.
#pragma once
#include <string>

#include "fusor/tensor.h"

namespace fusor {

Tensor read_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& what);
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace fusor
