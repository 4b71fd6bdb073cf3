// The CPU backend's kernel selection: returns an optimized kernel for a node when one applies
// (dtype, shapes and attributes supported), or nullptr so the caller falls back to the
// reference kernel. A CUDA backend would implement the same function shape.
#pragma once
#include <memory>

#include "kernels/kernel.h"

namespace fusor::cpu {

std::unique_ptr<Kernel> select_kernel(const KernelRequest& request);

}  // namespace fusor::cpu
