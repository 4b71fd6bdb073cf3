#include "kernels/cpu/backend.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "ir/elementwise.h"
#include "kernels/cpu/factories.h"
#include "passes/fused_kinds.h"
#include "kernels/ref/reference.h"

namespace fusor::cpu {
namespace {

using Factory = std::unique_ptr<Kernel> (*)(const KernelRequest&);

// One row per op that has an optimized kernel, besides the elementwise table's ops (all
// make_unary_kernel); every other op runs its reference kernel.
constexpr std::pair<Op, Factory> kFactories[] = {
    {Op::MatMul, make_matmul_kernel},
    {Op::Gemm, make_gemm_kernel},
    {Op::MatMulInteger, make_matmul_integer_kernel},
    {Op::Conv, make_conv_kernel},
    {Op::ConvInteger, make_conv_integer_kernel},
    {Op::QLinearMatMul, make_qlinear_matmul_kernel},
    {Op::QuantizeLinear, make_quantize_linear_kernel},
    {Op::DequantizeLinear, make_quantize_linear_kernel},
    {Op::DynamicQuantizeLinear, make_dynamic_quantize_linear_kernel},
    {Op::QLinearConv, make_qlinear_conv_kernel},
    {Op::ConvTranspose, make_conv_transpose_kernel},
    {Op::MaxPool, make_pool_kernel},
    {Op::AveragePool, make_pool_kernel},
    {Op::GlobalAveragePool, make_reduce_kernel},
    {Op::Add, make_binary_kernel},
    {Op::Sub, make_binary_kernel},
    {Op::Mul, make_binary_kernel},
    {Op::Div, make_binary_kernel},
    {Op::Pow, make_binary_kernel},
    {Op::Min, make_binary_kernel},
    {Op::Max, make_binary_kernel},
    {Op::PRelu, make_binary_kernel},
    {Op::Identity, make_unary_kernel},
    {Op::Dropout, make_unary_kernel},
    {Op::Softmax, make_softmax_kernel},
    {Op::ReduceMean, make_reduce_kernel},
    {Op::ReduceSum, make_reduce_kernel},
    {Op::LayerNormalization, make_layer_norm_kernel},
    {Op::InstanceNormalization, make_instance_norm_kernel},
    {Op::Transpose, make_transpose_kernel},
    {Op::Gather, make_gather_kernel},
    {Op::ScatterND, make_scatter_nd_kernel},
    {Op::Expand, make_expand_kernel},
    {Op::Slice, make_slice_kernel},
    {Op::Concat, make_concat_kernel},
    {Op::Split, make_split_kernel},
    {Op::Resize, make_resize_kernel},
    {Op::Upsample, make_resize_kernel},
    {Op::CachedAttention, make_cached_attention_kernel},
};

const std::array<Factory, static_cast<size_t>(Op::Count)>& table() {
  static const auto t = [] {
    std::array<Factory, static_cast<size_t>(Op::Count)> a{};
    for (Op op : kUnaryTableOps) a[static_cast<size_t>(op)] = make_unary_kernel;
    for (const auto& [op, f] : kFactories) a[static_cast<size_t>(op)] = f;
    return a;
  }();
  return t;
}

// Fused kinds that one standard op's kernel computes from the fused node's leading inputs and
// its attributes (the passes put the operands first and copy the attributes over).
struct StandIn {
  FusedKind kind;
  Op op;
  size_t inputs;
};
constexpr StandIn kStandIns[] = {
    {FusedKind::LayerNorm, Op::LayerNormalization, 3},
    {FusedKind::Gelu, Op::Gelu, 1},
    {FusedKind::QuantizedMaxPool, Op::MaxPool, 1},
};

using FusedFactory = KernelSelection (*)(const KernelRequest&);

constexpr std::pair<FusedKind, FusedFactory> kFusedFactories[] = {
    {FusedKind::Elementwise, make_fused_elementwise_kernel},
    {FusedKind::FusedMatMul, make_fused_matmul_kernel},
    {FusedKind::FusedConv, make_fused_conv_kernel},
    {FusedKind::Attention, make_attention_kernel},
    {FusedKind::QuantizedConv, make_quantized_conv_kernel},
    {FusedKind::QuantizedMatMul, make_quantized_matmul_kernel},
    {FusedKind::GroupNorm, make_group_norm_kernel},
    {FusedKind::Rotary, make_rotary_kernel},
};

KernelSelection select_fused_kernel(const KernelRequest& r) {
  for (const auto& [kind, factory] : kFusedFactories)
    if (is_fused_kind(r.node, kind)) return factory(r);
  for (const StandIn& s : kStandIns) {
    if (!is_fused_kind(r.node, s.kind)) continue;
    // Leading inputs: X, then gamma and beta as the node has them; an RMSNorm (rms = 1) needs no beta.
    const bool rms = r.node.attr_int("rms", 0) != 0;
    if (r.node.attr_int("has_scale", 1) == 0 || (r.node.attr_int("has_bias", 1) == 0 && !rms)) return nullptr;
    Node stand_in;
    stand_in.name = r.node.name;
    stand_in.op_type = op_info(s.op).name;
    stand_in.op = s.op;
    stand_in.attrs = r.node.attrs;
    size_t n = std::min(s.inputs - (rms && r.node.attr_int("has_bias", 1) == 0 ? 1 : 0), r.inputs.size());
    stand_in.inputs.assign(r.node.inputs.begin(), r.node.inputs.begin() + static_cast<long>(n));
    stand_in.outputs = r.node.outputs;
    return table()[static_cast<size_t>(s.op)](
        KernelRequest{stand_in, r.inputs.subspan(0, n), r.constants.subspan(0, n), r.outputs});
  }
  return nullptr;
}

// oneDNN's primitives take no empty tensors (it divides by zero planning an M = 0 matmul, so a
// batch of 0 killed the process): their ops run the reference kernel then.
bool runs_on_onednn(const Node& n) {
  switch (n.op) {
    case Op::MatMul: case Op::Gemm: case Op::MatMulInteger: case Op::Conv: case Op::ConvInteger:
    case Op::QLinearMatMul: case Op::QLinearConv: case Op::ConvTranspose: case Op::MaxPool: case Op::AveragePool:
      return true;
    case Op::Fused:
      for (FusedKind k : {FusedKind::FusedMatMul, FusedKind::FusedConv, FusedKind::Attention, FusedKind::QuantizedConv,
                          FusedKind::QuantizedMatMul, FusedKind::QuantizedMaxPool})
        if (is_fused_kind(n, k)) return true;
      return false;
    default:
      return false;
  }
}

bool empty(const TensorType& t) { return t.dtype != DType::Undefined && numel_of(t.dims) == 0; }

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  KernelSelection select(const KernelRequest& request) const override {
    if (runs_on_onednn(request.node) && (std::any_of(request.inputs.begin(), request.inputs.end(), empty) ||
                                         std::any_of(request.outputs.begin(), request.outputs.end(), empty)))
      return KernelSelection::declined("oneDNN takes no empty tensors");
    if (request.node.op == Op::Fused) return select_fused_kernel(request);
    // Ops of other domains (ai.onnx.ml) run their reference kernels; fusor's own op rows have kernels here.
    const bool own_op = request.node.op == Op::CachedAttention;  // domain "fusor"
    if ((!request.node.domain.empty() && !own_op) || request.node.op == Op::Count) return nullptr;
    Factory f = table()[static_cast<size_t>(request.node.op)];
    return f ? f(request) : nullptr;
  }

  std::unique_ptr<Kernel> reference_kernel(const Node& node) const override { return make_reference_kernel(node); }
};

}  // namespace

const Backend& backend() {
  static const CpuBackend cpu;
  return cpu;
}

}  // namespace fusor::cpu
