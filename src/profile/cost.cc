#include "profile/cost.h"

#include <algorithm>

#include "ir/bind.h"
#include "ir/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

double numel(const TensorType& t) { return t.dtype == DType::Undefined ? 0.0 : static_cast<double>(numel_of(t.dims)); }
double nbytes(const TensorType& t) {
  return t.dtype == DType::Undefined ? 0.0 : numel(t) * static_cast<double>(dtype_size(t.dtype));
}
const TensorType& input_or_empty(std::span<const TensorType> in, size_t i) {
  static const TensorType empty;
  return i < in.size() ? in[i] : empty;
}
double product(const std::vector<int64_t>& v) {
  double p = 1;
  for (int64_t d : v) p *= static_cast<double>(d);
  return p;
}

// Sum of the body's node FLOPs, bound with the fused node's input types and constants.
double fused_flops(const Node& node, std::span<const TensorType> inputs, std::span<const Tensor* const> constants) {
  const Graph& body = *node.body;
  std::vector<Tensor> frozen(inputs.size());
  for (size_t i = 0; i < constants.size() && i < frozen.size(); ++i)
    if (constants[i]) frozen[i] = *constants[i];
  Binding b;
  try {
    b = bind_graph(body, inputs, frozen, ref::evaluate);
  } catch (const Error&) {
    return 0.0;  // a cost model never fails a profile
  }
  double flops = 0;
  for (const Node& n : body.nodes) {
    if (b.folded(n)) continue;
    std::vector<TensorType> in, out;
    std::vector<const Tensor*> consts;
    for (int v : n.inputs) {
      in.push_back(v >= 0 ? b.types[static_cast<size_t>(v)] : TensorType{});
      consts.push_back(v >= 0 && b.is_constant(v) ? &b.constants[static_cast<size_t>(v)] : nullptr);
    }
    for (int v : n.outputs) out.push_back(v >= 0 ? b.types[static_cast<size_t>(v)] : TensorType{});
    flops += step_cost(n, in, out, consts).flops;
  }
  return flops;
}

}  // namespace

StepCost step_cost(const Node& node, std::span<const TensorType> inputs, std::span<const TensorType> outputs,
                   std::span<const Tensor* const> constants) {
  StepCost c;
  for (const auto& t : inputs) c.bytes_read += nbytes(t);
  for (const auto& t : outputs) c.bytes_written += nbytes(t);
  const double out = outputs.empty() ? 0.0 : numel(outputs[0]);

  Op op = node.op;
  if (op == Op::Count) {
    auto found = op_from_name(node.op_type);
    if (!found) return c;  // unknown op: bytes only
    op = *found;
  }
  if (op == Op::Fused) {
    if (node.body) c.flops = fused_flops(node, inputs, constants);
    return c;
  }
  const TensorType& a = input_or_empty(inputs, 0);
  const TensorType& b = input_or_empty(inputs, 1);

  switch (op) {
    case Op::MatMul: case Op::MatMulInteger: case Op::QLinearMatMul: {
      // numpy semantics: a 1-D A is [K]; every output element is a dot product of length K.
      const int64_t k = a.dims.empty() ? 0 : a.dims.back();
      c.flops = 2.0 * out * static_cast<double>(k);
      break;
    }
    case Op::Gemm: {
      if (a.dims.size() == 2) {
        const int64_t k = node.attr_int("transA", 0) != 0 ? a.dims[0] : a.dims[1];
        c.flops = 2.0 * out * static_cast<double>(k);
      }
      if (input_or_empty(inputs, 2).dtype != DType::Undefined) c.flops += out;
      break;
    }
    case Op::Conv: case Op::ConvInteger: case Op::QLinearConv: {
      // W is [M, C/group, k1, k2, ...]: one multiply-add per weight element feeding an output.
      const TensorType& w = op == Op::QLinearConv ? input_or_empty(inputs, 3) : b;
      if (w.dims.size() >= 2) c.flops = 2.0 * out * product(std::vector<int64_t>(w.dims.begin() + 1, w.dims.end()));
      if (op == Op::Conv && input_or_empty(inputs, 2).dtype != DType::Undefined) c.flops += out;
      break;
    }
    case Op::ConvTranspose: {
      // W is [C, M/group, k1, ...]: each input element feeds M/group * prod(k) outputs.
      if (b.dims.size() >= 2) c.flops = 2.0 * numel(a) * product(std::vector<int64_t>(b.dims.begin() + 1, b.dims.end()));
      if (input_or_empty(inputs, 2).dtype != DType::Undefined) c.flops += out;
      break;
    }
    case Op::GroupNormalization: case Op::InstanceNormalization: c.flops = 8.0 * out; break;
    case Op::Softmax: case Op::LogSoftmax: c.flops = 5.0 * out; break;
    case Op::LayerNormalization: c.flops = 8.0 * out; break;
    case Op::ReduceMean: case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceProd:
    case Op::ReduceL1: case Op::ReduceL2: case Op::ReduceSumSquare: case Op::ReduceLogSum:
    case Op::ReduceLogSumExp: case Op::GlobalAveragePool: case Op::GlobalMaxPool:
      c.flops = numel(a);
      break;
    case Op::MaxPool: case Op::AveragePool: case Op::LpPool: c.flops = out * product(node.attr_ints("kernel_shape")); break;
    case Op::Gather:
      // Reads the indices and only the rows it gathers, not the whole table.
      c.bytes_read = nbytes(b) + c.bytes_written;
      break;
    case Op::Slice:
      c.bytes_read = c.bytes_written;
      for (size_t i = 1; i < inputs.size(); ++i) c.bytes_read += nbytes(inputs[i]);
      break;
    case Op::Shape:
      c.bytes_read = 0;  // metadata only
      break;
    default:
      switch (op_info(op).category) {
        case OpCategory::Elementwise: case OpCategory::Broadcast: c.flops = elementwise_cost(op).flops * out; break;
        default: break;  // injective and opaque ops move data only
      }
  }
  return c;
}

StepCost plan_step_cost(const Plan& plan, const Step& step) {
  auto type_of = [&](int v) { return v < 0 ? TensorType{} : plan.types[static_cast<size_t>(v)]; };
  std::vector<TensorType> in, outs;
  std::vector<const Tensor*> consts;
  for (int v : step.inputs) {
    in.push_back(type_of(v));
    consts.push_back(v >= 0 && plan.is_constant(v) ? &plan.constants[static_cast<size_t>(v)] : nullptr);
  }
  for (int v : step.outputs) outs.push_back(type_of(v));
  return step_cost(plan.graph->nodes[static_cast<size_t>(step.node)], in, outs, consts);
}

}  // namespace fusor
