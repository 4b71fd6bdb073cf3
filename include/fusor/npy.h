// NumPy .npy files (format 1.0-3.0, little-endian, C order) <-> Tensor. bfloat16, which numpy lacks,
// is '<V2' as ml_dtypes writes it: numpy.load(path).view(ml_dtypes.bfloat16) reads fusor's.
#pragma once
#include <string>

#include "fusor/tensor.h"

namespace fusor {

Tensor read_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& what);
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace fusor
