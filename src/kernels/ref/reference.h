// The reference kernels: one plain kernel per op, the ground truth every fast kernel is tested
// against and what plan-time constant folding evaluates with. Their table is keyed by Op and
// generated from FUSOR_OPS (ir/op_table.h), so adding an op is one row there plus its kernel
// here (src/kernels/ref/*.cc, grouped by op family).
#pragma once
#include <memory>
#include <span>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace fusor {

// Plain reference kernel: `outputs` arrive allocated with the shapes the shape function gave.
// Missing optional inputs are undefined Tensors.
using RefKernelFn = void (*)(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs);

namespace ref {
#define FUSOR_DECLARE_REF_FN(name, cat) \
  void name(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs);
FUSOR_OPS(FUSOR_DECLARE_REF_FN)
#undef FUSOR_DECLARE_REF_FN

// The reference kernel of `op`.
RefKernelFn kernel_for(Op op);

// Runs the reference kernel of node.op: the evaluator bind_graph folds constants with.
void evaluate(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs);
}  // namespace ref

// A Kernel that runs the node's reference kernel, named "ref.<Op>".
std::unique_ptr<Kernel> make_reference_kernel(const Node& node);

}  // namespace fusor
