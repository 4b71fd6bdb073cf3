// MatMulInteger on oneDNN's int8 matmul: u8 or s8 activations (A, rows collapsed into M) against
// constant s8 weights (B, 2-D) packed once, int32 out, exact. A's zero point (a scalar, constant or
// from DynamicQuantizeLinear at run time) is a runtime zero-point attribute. B's zero point must be
// absent or all zeros (symmetric weights, what ONNX Runtime's quantizers emit for s8); anything
// else, u8 weights (oneDNN 2.6 has no u8 weights) or a per-row A zero point runs the reference.
// Without VNNI, weights whose products would saturate vpmaddubsw are declined (int8_support.h).
//
// QuantizedMatMul (fuse_quantized) is the same primitive with its dequantizing epilogue in
// oneDNN's output stage: the int32 result times the per-column scale read at run time (oneDNN's
// runtime output scales), then the bias as a binary-add post-op, float32 out: the Cast, Mul and
// Add it replaces, without the int32 tensor between them.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/int8_support.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/packed_weights.h"
#include "passes/fused_kinds.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// Where the kernel finds its run-time operands among the node's inputs, and its epilogue.
struct IntegerOperands {
  size_t a = 0;
  int zero_point = -1;  // A's zero point, read at run time; -1: none
  int scale = -1;       // QuantizedMatMul: the per-column (or single) scale input; -1: int32 out
  int64_t scales = 0;   // its element count
  const Tensor* bias = nullptr;  // QuantizedMatMul: float32 [N]
};

class MatmulIntegerKernel final : public Kernel {
 public:
  MatmulIntegerKernel(int64_t rows, int64_t K, int64_t N, bool a_signed, const Tensor& b, IntegerOperands io)
      : io_(io) {
    const bool a_has_zp = io.zero_point >= 0, dequantize = io.scale >= 0;
    const dt a_type = a_signed ? dt::s8 : dt::u8;
    const memory::desc src({rows, K}, a_type, tag::ab), dst({rows, N}, dequantize ? dt::f32 : dt::s32, tag::ab);
    const memory::desc wei_plain({K, N}, dt::s8, tag::ab), wei_any({K, N}, dt::s8, tag::any);
    const memory::desc bias_md({1, N}, dt::f32, tag::ab);
    std::string key = "matmul_int|" + onednn::md_key(src) + "|" + onednn::md_key(wei_any) + "|" + onednn::md_key(dst) +
                      (a_has_zp ? "|zp" : "") + (dequantize ? "|scales" + std::to_string(io.scales) : "") +
                      (io.bias ? "|bias" : "");
    entry_ = onednn::cached_as<Entry>(key, [&] {
      dnnl::primitive_attr attr;
      if (a_has_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      if (dequantize) attr.set_output_scales(io.scales > 1 ? 1 << 1 : 0, {DNNL_RUNTIME_F32_VAL});
      if (io.bias) {
        dnnl::post_ops po;
        po.append_binary(dnnl::algorithm::binary_add, bias_md);
        attr.set_post_ops(po);
      }
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      auto e = std::make_shared<Entry>();
      e->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei_any, dst), attr, onednn::engine());
      e->prim = dnnl::matmul(e->pd);
      return e;
    });
    packed_ = packed_weights(b.raw(), wei_plain, entry_->pd.weights_desc());
    auto& eng = onednn::engine();
    src_mem_ = memory(src, eng, DNNL_MEMORY_NONE);
    dst_mem_ = memory(dst, eng, DNNL_MEMORY_NONE);
    scratch_mem_ = memory(entry_->pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    zp_mem_ = memory(memory::desc({1}, dt::s32, tag::a), eng, &zp_);
    args_ = {{DNNL_ARG_SRC, src_mem_}, {DNNL_ARG_WEIGHTS, packed_->memory()}, {DNNL_ARG_DST, dst_mem_},
             {DNNL_ARG_SCRATCHPAD, scratch_mem_}};
    if (a_has_zp) args_.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem_);
    if (dequantize) {
      scales_mem_ = memory(memory::desc({io.scales}, dt::f32, tag::a), eng, DNNL_MEMORY_NONE);
      args_.emplace(DNNL_ARG_ATTR_OUTPUT_SCALES, scales_mem_);
    }
    if (io.bias) {
      bias_mem_ = memory(bias_md, eng);
      std::memcpy(bias_mem_.get_data_handle(), io.bias->raw(), bias_md.get_size());
      args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, bias_mem_);
    }
    arg_list_ = onednn::arg_list(args_);
    name_ = std::string(dequantize ? "matmul_integer_dequantized_" : "matmul_integer_") + (a_signed ? "s8" : "u8") +
            "s8" + (io.bias ? "_bias" : "") + "_onednn_packed";
  }

  size_t scratch_bytes() const override { return entry_->pd.scratchpad_desc().get_size(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    if (io_.zero_point >= 0) zp_ = static_cast<int32_t>(in[static_cast<size_t>(io_.zero_point)].scalar_as_double(0));
    if (io_.scale >= 0) scales_mem_.set_data_handle(const_cast<void*>(in[static_cast<size_t>(io_.scale)].raw()));
    src_mem_.set_data_handle(const_cast<void*>(in[io_.a].raw()));
    dst_mem_.set_data_handle(out[0].raw());
    scratch_mem_.set_data_handle(scratch.data());
    onednn::execute(entry_->prim, arg_list_);
    onednn::stream().wait();
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return true; }

 private:
  struct Entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };
  IntegerOperands io_;
  int32_t zp_ = 0;
  std::shared_ptr<Entry> entry_;
  std::shared_ptr<const PackedWeights> packed_;
  memory src_mem_, dst_mem_, scratch_mem_, zp_mem_, scales_mem_, bias_mem_;
  std::unordered_map<int, memory> args_;
  onednn::ArgList arg_list_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_integer_kernel(const KernelRequest& r) {
  const auto ops = int8_operands(r, Op::MatMulInteger);
  const Dims& a_dims = r.inputs[0].dims;
  if (!ops || ops->weights->rank() != 2 || a_dims.size() < 2) return nullptr;
  const Tensor* b = ops->weights;
  const bool a_signed = ops->activations_signed, a_has_zp = ops->has_zero_point;
  const int64_t K = b->dim(0), N = b->dim(1);
  if (a_dims.back() != K || K == 0 || N == 0 || numel_of(a_dims) == 0) return nullptr;
  if (!onednn_int8_has_vnni() && int8_weights_may_saturate(b->data<int8_t>(), 1, K, N)) return nullptr;
  try {
    return std::make_unique<MatmulIntegerKernel>(numel_of(a_dims) / K, K, N, a_signed, *b,
                                                 IntegerOperands{.zero_point = a_has_zp ? 2 : -1});
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

KernelSelection make_quantized_matmul_kernel(const KernelRequest& r) {
  using R = QuantizedOperand;
  const std::vector<int64_t> at = r.node.attr_ints("operands");
  if (at.size() != static_cast<size_t>(R::Count)) return KernelSelection::declined("no operands attribute");
  auto index = [&](R role) { return at[static_cast<size_t>(role)]; };
  for (int64_t i : at)
    if (i >= static_cast<int64_t>(r.inputs.size())) return KernelSelection::declined("an operand index is out of range");
  if (index(R::X) < 0 || index(R::W) < 0 || index(R::AccScale) < 0) return KernelSelection::declined("an operand is missing");
  const auto x = static_cast<size_t>(index(R::X)), w = static_cast<size_t>(index(R::W));
  const Tensor* b = r.constants[w];
  const DType a_type = r.inputs[x].dtype;
  const Dims& a_dims = r.inputs[x].dims;
  if ((a_type != DType::UInt8 && a_type != DType::Int8) || !b || b->dtype() != DType::Int8 || b->rank() != 2 ||
      a_dims.size() < 2 || r.outputs[0].dtype != DType::Float32)
    return KernelSelection::declined("operands are not u8/s8 with constant 2-D s8 weights");
  const int64_t K = b->dim(0), N = b->dim(1);
  if (a_dims.back() != K || K == 0 || N == 0 || numel_of(a_dims) == 0) return KernelSelection::declined("empty or mismatched shapes");
  if (a_type == DType::Int8 && !onednn_int8_has_vnni())
    return KernelSelection::declined("s8 activations without VNNI are not exact in oneDNN");
  if (!onednn_int8_has_vnni() && int8_weights_may_saturate(b->data<int8_t>(), 1, K, N))
    return KernelSelection::declined("weights whose products saturate vpmaddubsw without VNNI");
  const auto scale = static_cast<size_t>(index(R::AccScale));
  if (r.inputs[scale].dtype != DType::Float32) return KernelSelection::declined("the scale is not float32");
  IntegerOperands io{.a = x,
                     .zero_point = static_cast<int>(index(R::XZeroPoint)),
                     .scale = static_cast<int>(scale),
                     .scales = numel_of(r.inputs[scale].dims),
                     .bias = index(R::Bias) >= 0 ? r.constants[static_cast<size_t>(index(R::Bias))] : nullptr};
  if (io.scales != 1 && io.scales != N) return KernelSelection::declined("the scale is neither one value nor per column");
  if (index(R::Bias) >= 0 && (!io.bias || io.bias->dtype() != DType::Float32 || io.bias->numel() != N))
    return KernelSelection::declined("the bias is not a float32 constant row");
  try {
    return std::make_unique<MatmulIntegerKernel>(numel_of(a_dims) / K, K, N, a_type == DType::Int8, *b, io);
  } catch (const dnnl::error& e) {
    return KernelSelection::declined(std::string("oneDNN has no int8 matmul for it: ") + e.what());
  }
}

}  // namespace fusor::cpu
