// The profiler's cost model: FLOPs and bytes moved by one step, from its op type, attributes
// and bound shapes alone (no timing, no kernel internals). It describes the ideal work of the
// op, so an efficiency figure compares the kernel with what the op needs, not with what the
// kernel happened to do.
//
// Conventions (docs/profile.md has the table):
// - A multiply-add is 2 FLOPs. MatMul (and its integer forms): 2*K per output element; Gemm adds
//   one per output element for C; Conv (and ConvInteger, QLinearConv): 2*(C/group)*prod(kernel)
//   per output element, plus one for a bias; ConvTranspose: 2*(M/group)*prod(kernel) per input
//   element, plus one per output for a bias.
// - Unary elementwise ops: the elementwise table's FLOPs per element (ir/elementwise_table.h:
//   each arithmetic op, compare-select and transcendental function of the formula counts 1, so
//   Relu 1, Sigmoid 4, Gelu 5). Binary ops, comparisons and Where: 1 per output element;
//   BatchNormalization 2; copies, casts and layout ops (Identity, Cast, Transpose, Gather, ...) 0.
// - Softmax/LogSoftmax: 5 per element (max, subtract, exp, sum, divide/log).
//   LayerNormalization, GroupNormalization, InstanceNormalization: 8 per element (mean,
//   subtract, square, sum, scale, gamma, beta, ~rsqrt).
// - Reductions (every Reduce*, the global pools): 1 per input element. Pools (Max, Average, Lp):
//   prod(kernel) per output element. Ops not named here (recurrent, spectral, Einsum, the
//   control-flow ops) count 0 FLOPs: bytes only.
// - Fused nodes: the FLOPs of their body's nodes; bytes are their own inputs and outputs only
//   (intermediates stay in registers or cache: that is the point of fusing).
// - Bytes read: every input tensor once (weights included), except Gather (indices plus the
//   gathered rows) and Slice (the sliced region); bytes written: every output once.
#pragma once
#include <cstdint>
#include <span>

#include "ir/graph.h"
#include "plan/plan.h"

namespace fusor {

struct StepCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double bytes() const { return bytes_read + bytes_written; }
};

// `inputs`/`outputs` are the node's bound types in node order; omitted optional ones have dtype
// Undefined and count as nothing. `constants` (optional, per input) are the plan-time values a
// fused node's body may need to bind its shapes.
StepCost step_cost(const Node& node, std::span<const TensorType> inputs, std::span<const TensorType> outputs,
                   std::span<const Tensor* const> constants = {});

// The cost of one step of a bound plan, from the plan's types and constants.
StepCost plan_step_cost(const Plan& plan, const Step& step);

}  // namespace fusor
