#include "passes/passes.h"

namespace fusor::passes {

void fuse_gemm_epilogue(FusionContext&) {}

}  // namespace fusor::passes
