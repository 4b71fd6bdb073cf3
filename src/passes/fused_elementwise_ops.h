// The ops a fused Elementwise node's body may hold: exactly those the fused kernel's program
// compiler (kernels/cpu/fused_elementwise_program.cc) runs. The fusion pass takes only these as
// members and the compiler refuses any other op by the same test, so the pass never forms a
// group the kernel then declines. (Each op's dtypes are checked by both, per operand.)
#pragma once
#include "ir/graph.h"

namespace fusor {

bool fused_elementwise_runs(const Node& n);

}  // namespace fusor
