#include <array>

#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

constexpr std::array<RefKernelFn, static_cast<size_t>(Op::Count)> kKernels = {
#define FUSOR_REF_ROW(name, cat) &ref::name,
    FUSOR_OPS(FUSOR_REF_ROW)
#undef FUSOR_REF_ROW
};

}  // namespace

RefKernelFn kernel_for(Op op) { return kKernels.at(static_cast<size_t>(op)); }

void evaluate(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  kernel_for(node.op)(node, inputs, outputs);
}

}  // namespace fusor::ref
