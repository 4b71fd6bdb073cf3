// The CPU backend: oneDNN GEMM, convolution and pooling, our SIMD kernels, fused elementwise
// programs and attention; the reference kernels (kernels/ref) for everything else. Its kernels
// split their work over OpenMP threads.
#pragma once
#include "kernels/backend.h"

namespace fusor::cpu {

const Backend& backend();

}  // namespace fusor::cpu
