#include "kernels/cpu/factories.h"

namespace fusor::cpu {

std::unique_ptr<Kernel> make_fused_matmul_kernel(const KernelRequest&) { return nullptr; }

}  // namespace fusor::cpu
