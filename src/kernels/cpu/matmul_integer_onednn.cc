// MatMulInteger on oneDNN's int8 matmul: u8 or s8 activations (A, rows collapsed into M) against
// constant s8 weights (B, 2-D) packed once, int32 out, exact. A's zero point (a scalar, constant or
// from DynamicQuantizeLinear at run time) is a runtime zero-point attribute. B's zero point must be
// absent or all zeros (symmetric weights, what ONNX Runtime's quantizers emit for s8); anything
// else, u8 weights (oneDNN 2.6 has no u8 weights) or a per-row A zero point runs the reference.
// Without VNNI, weights whose products would saturate vpmaddubsw are declined (int8_support.h).
//
// QuantizedMatMul (fuse_quantized) is the same primitive with its dequantizing epilogue in
// oneDNN's output stage: the int32 result converted to float32 (as the Cast does), times the
// per-column scale read at run time and plus the bias, both as binary post-ops: the Cast, Mul and
// Add it replaces, without the int32 tensor between them. The scale is a binary-multiply post-op
// rather than oneDNN's runtime output scales because oneDNN 2.6 runs runtime output scales only
// on its jit gemm (138-162 against 1000+ GOPS on brgemm for MiniLM's 128 x 384 x 1536 here).
// fuse_gemm_epilogue may add an activation (eltwise post-op) and a residual (a second binary add,
// read at run time).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/int8_support.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_post_ops.h"
#include "kernels/cpu/packed_weights.h"
#include "passes/fused_kinds.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// Where the kernel finds its run-time operands among the node's inputs, and its epilogue:
//   dst = saturate(round(post_ops(out_scale * acc)) + dst_zero_point),
// rounded before the zero point is added, as QuantizeLinear does: oneDNN's own dst zero point
// rounds after adding it, one step off on ties when it is odd, so such a kernel writes int32 into
// scratch and adds the zero point itself.
//   post-ops: [* the run-time scale] + bias, then the activation, then + residual (float32 out only).
struct IntegerOperands {
  size_t a = 0;
  int zero_point = -1;  // A's zero point, read at run time; -1: none
  int scale = -1;       // dynamic QuantizedMatMul: the per-column (or single) scale input
  int64_t scales = 0;   // its element count
  std::vector<float> out_scales{};  // static QuantizedMatMul: constant scales (per column or one)
  std::vector<float> bias{};      // [N], in output units; empty: none
  dt dst = dt::s32;               // s32 (MatMulInteger), f32 (dequantized) or u8/s8 (requantized)
  int32_t dst_zero_point = 0;
  std::string activation = "none";  // onednn_post_ops.h's names
  float alpha = 0.f;                // leaky_relu's slope
  int residual = -1;                // the residual input, [rows, N] float32; -1: none
  bool trans_b = false;             // B is stored [N, K]
};

class MatmulIntegerKernel final : public Kernel {
 public:
  MatmulIntegerKernel(int64_t rows, int64_t K, int64_t N, bool a_signed, const Tensor& b, IntegerOperands io)
      : io_(io), out_type_(io.dst), outputs_(rows * N) {
    if (io.dst_zero_point) io.dst = dt::s32;  // rounded here, the zero point added in run()
    const bool a_has_zp = io.zero_point >= 0, dequantize = io.scale >= 0;
    const dt a_type = a_signed ? dt::s8 : dt::u8;
    const memory::desc src({rows, K}, a_type, tag::ab), dst({rows, N}, io.dst, tag::ab);
    const memory::desc wei_plain({K, N}, dt::s8, io.trans_b ? tag::ba : tag::ab), wei_any({K, N}, dt::s8, tag::any);
    const memory::desc bias_md({1, N}, dt::f32, tag::ab), scales_md({1, io.scales > 1 ? N : 1}, dt::f32, tag::ab);
    std::string key = "matmul_int|" + onednn::md_key(src) + "|" + onednn::md_key(wei_any) + "|" + onednn::md_key(dst) +
                      (a_has_zp ? "|zp" : "") + (dequantize ? "|scales" + std::to_string(io.scales) : "") +
                      (io.bias.empty() ? "" : "|bias") + "|" + io.activation + std::to_string(io.alpha) +
                      (io.residual >= 0 ? "|residual" : "");
    for (float sc : io.out_scales) key.append(",").append(std::to_string(sc));  // baked into the primitive
    // Post-op positions, in the order the chain below appends them (-1: absent).
    int next_op = 0;
    const int scale_op = dequantize ? next_op++ : -1, bias_op = io.bias.empty() ? -1 : next_op++;
    if (onednn::eltwise_for(io.activation)) ++next_op;
    const int residual_op = io.residual >= 0 ? next_op++ : -1;
    entry_ = onednn::cached_as<Entry>(key, [&] {
      dnnl::primitive_attr attr;
      if (a_has_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      if (!io.out_scales.empty()) attr.set_output_scales(io.out_scales.size() > 1 ? 1 << 1 : 0, io.out_scales);
      dnnl::post_ops po;
      if (dequantize) po.append_binary(dnnl::algorithm::binary_mul, scales_md);
      if (!io.bias.empty()) po.append_binary(dnnl::algorithm::binary_add, bias_md);
      if (auto alg = onednn::eltwise_for(io.activation))
        po.append_eltwise(1.f, *alg, onednn::eltwise_alpha(io.activation, io.alpha), 0.f);
      if (io.residual >= 0) po.append_binary(dnnl::algorithm::binary_add, dst);
      attr.set_post_ops(po);
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
    if (scale_op >= 0) {
      scales_mem_ = memory(scales_md, eng, DNNL_MEMORY_NONE);
      args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(scale_op) | DNNL_ARG_SRC_1, scales_mem_);
    }
    if (bias_op >= 0) {
      bias_mem_ = memory(bias_md, eng);
      std::memcpy(bias_mem_.get_data_handle(), io.bias.data(), bias_md.get_size());
      args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(bias_op) | DNNL_ARG_SRC_1, bias_mem_);
    }
    if (residual_op >= 0) {
      residual_mem_ = memory(dst, eng, DNNL_MEMORY_NONE);
      args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(residual_op) | DNNL_ARG_SRC_1, residual_mem_);
    }
    arg_list_ = onednn::arg_list(args_);
    const char* out = out_type_ == dt::f32 ? "dequantized_" : out_type_ == dt::u8 ? "requantized_u8_" : out_type_ == dt::s8 ? "requantized_s8_" : "";
    name_ = std::string("matmul_integer_") + out + (a_signed ? "s8" : "u8") + "s8" + (io.bias.empty() ? "" : "_bias") +
            (io.activation == "none" ? "" : "_" + io.activation) + (io.residual >= 0 ? "_residual" : "") + "_onednn_packed";
  }

  size_t scratch_bytes() const override {
    return round_up(entry_->pd.scratchpad_desc().get_size()) + (io_.dst_zero_point ? outputs_ * sizeof(int32_t) : 0);
  }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    if (io_.zero_point >= 0) zp_ = static_cast<int32_t>(in[static_cast<size_t>(io_.zero_point)].scalar_as_double(0));
    if (io_.scale >= 0) scales_mem_.set_data_handle(const_cast<void*>(in[static_cast<size_t>(io_.scale)].raw()));
    src_mem_.set_data_handle(const_cast<void*>(in[io_.a].raw()));
    if (io_.residual >= 0) residual_mem_.set_data_handle(const_cast<void*>(in[static_cast<size_t>(io_.residual)].raw()));
    int32_t* rounded = reinterpret_cast<int32_t*>(scratch.data() + round_up(entry_->pd.scratchpad_desc().get_size()));
    dst_mem_.set_data_handle(io_.dst_zero_point ? static_cast<void*>(rounded) : out[0].raw());
    scratch_mem_.set_data_handle(scratch.data());
    onednn::execute(entry_->prim, arg_list_);
    onednn::stream().wait();
    if (io_.dst_zero_point) {
      if (out_type_ == dt::u8) shift_and_saturate(rounded, out[0].data<uint8_t>());
      else shift_and_saturate(rounded, out[0].data<int8_t>());
    }
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return true; }
  std::string implementation() const { return entry_->pd.impl_info_str(); }

 private:
  struct Entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };
  static size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }
  template <class T>
  void shift_and_saturate(const int32_t* rounded, T* y) const {
    const int32_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    for (int64_t i = 0; i < outputs_; ++i) y[i] = static_cast<T>(std::clamp(rounded[i] + io_.dst_zero_point, lo, hi));
  }

  IntegerOperands io_;
  dt out_type_;      // what the node writes: s32, f32, or u8/s8
  int64_t outputs_;  // rows x N
  int32_t zp_ = 0;
  std::shared_ptr<Entry> entry_;
  std::shared_ptr<const PackedWeights> packed_;
  memory src_mem_, dst_mem_, scratch_mem_, zp_mem_, scales_mem_, bias_mem_, residual_mem_;
  std::unordered_map<int, memory> args_;
  onednn::ArgList arg_list_;
  std::string name_;
};

}  // namespace

std::string int8_matmul_implementation(const Kernel& k) {
  const auto* m = dynamic_cast<const MatmulIntegerKernel*>(&k);
  return m ? m->implementation() : std::string();
}

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

// QuantizedMatMul in either form fuse_quantized makes (passes/fuse_quantized.cc): dynamic (an
// AccScale input: float32 out = acc * scale + bias) or a static QDQ unit (scales and zero points
// constant: requantized out = acc * x_scale * w_scale / y_scale + bias / y_scale [relu], + y's
// zero point, the bias as DequantizeLinear gives it).
KernelSelection make_quantized_matmul_kernel(const KernelRequest& r) {
  using R = QuantizedOperand;
  const std::vector<int64_t> at = r.node.attr_ints("operands");
  if (at.size() != static_cast<size_t>(R::Count)) return KernelSelection::declined("no operands attribute");
  auto index = [&](R role) { return at[static_cast<size_t>(role)]; };
  for (int64_t i : at)
    if (i >= static_cast<int64_t>(r.inputs.size())) return KernelSelection::declined("an operand index is out of range");
  auto constant = [&](R role) { return index(role) >= 0 ? r.constants[static_cast<size_t>(index(role))] : nullptr; };
  const bool dynamic = index(R::AccScale) >= 0;
  if (index(R::X) < 0 || index(R::W) < 0 || (!dynamic && (!constant(R::XScale) || !constant(R::WScale) || !constant(R::YScale))))
    return KernelSelection::declined("an operand is missing or not a plan-time constant");
  const auto x = static_cast<size_t>(index(R::X));
  const Tensor* b = constant(R::W);
  const DType a_type = r.inputs[x].dtype, y_type = r.outputs[0].dtype;
  const Dims& a_dims = r.inputs[x].dims;
  const bool y_ok = dynamic ? y_type == DType::Float32 : (y_type == DType::UInt8 || y_type == DType::Int8);
  if ((a_type != DType::UInt8 && a_type != DType::Int8) || !b || b->dtype() != DType::Int8 || b->rank() != 2 ||
      a_dims.size() < 2 || !y_ok)
    return KernelSelection::declined("operands are not u8/s8 with constant 2-D s8 weights");
  const bool trans_b = r.node.attr_int("trans_b", 0) != 0;
  const int64_t K = trans_b ? b->dim(1) : b->dim(0), N = trans_b ? b->dim(0) : b->dim(1);
  if (a_dims.back() != K || K == 0 || N == 0 || numel_of(a_dims) == 0) return KernelSelection::declined("empty or mismatched shapes");
  if (a_type == DType::Int8 && !onednn_int8_has_vnni())
    return KernelSelection::declined("s8 activations without VNNI are not exact in oneDNN");
  if (!onednn_int8_has_vnni() &&
      int8_weights_may_saturate(b->data<int8_t>(), trans_b ? N : 1, K, trans_b ? 1 : N))
    return KernelSelection::declined("weights whose products saturate vpmaddubsw without VNNI");
  IntegerOperands io;
  io.a = x;
  io.zero_point = static_cast<int>(index(R::XZeroPoint));
  io.trans_b = trans_b;
  io.activation = r.node.attr_string("activation", "none");
  io.alpha = r.node.attr_float("alpha", 0.f);
  if (io.activation != "none" && !onednn::eltwise_for(io.activation))
    return KernelSelection::declined("activation '" + io.activation + "' is not an oneDNN post-op here");
  const Tensor* bias = constant(R::Bias);
  if (index(R::Bias) >= 0 && (!bias || bias->numel() != N)) return KernelSelection::declined("the bias is not a constant row");
  if (index(R::Residual) >= 0) {
    const TensorType& res = r.inputs[static_cast<size_t>(index(R::Residual))];
    if (!dynamic) return KernelSelection::declined("a residual after a requantizing epilogue");
    if (res.dtype != DType::Float32 || numel_of(res.dims) != numel_of(a_dims) / K * N)
      return KernelSelection::declined("the residual is not float32 of the output's size");
    io.residual = static_cast<int>(index(R::Residual));
  }
  if (dynamic) {
    const auto scale = static_cast<size_t>(index(R::AccScale));
    io.scale = static_cast<int>(scale);
    io.scales = numel_of(r.inputs[scale].dims);
    io.dst = dt::f32;
    if (r.inputs[scale].dtype != DType::Float32 || (io.scales != 1 && io.scales != N))
      return KernelSelection::declined("the scale is neither one float32 value nor per column");
    if (bias && bias->dtype() != DType::Float32) return KernelSelection::declined("the bias is not float32");
    if (bias) io.bias.assign(bias->data<float>(), bias->data<float>() + N);
  } else {
    const Tensor* ws = constant(R::WScale);
    if (ws->numel() != 1 && ws->numel() != N) return KernelSelection::declined("the weight scale's size");
    const auto xs = static_cast<float>(constant(R::XScale)->scalar_as_double(0));
    const double ys = constant(R::YScale)->scalar_as_double(0);
    const Tensor* bs = constant(R::BiasScale);
    for (int64_t n = 0; n < N; ++n) {
      // The products DequantizeLinear makes, in float32, then divided by the output's scale.
      const float w_scale = static_cast<float>(ws->scalar_as_double(ws->numel() == 1 ? 0 : n));
      io.out_scales.push_back(static_cast<float>(static_cast<double>(xs * w_scale) / ys));
      if (!bias) continue;
      const float b = bs ? static_cast<float>(bias->scalar_as_double(n)) *
                               static_cast<float>(bs->scalar_as_double(bs->numel() == 1 ? 0 : n))
                         : static_cast<float>(bias->scalar_as_double(n));
      io.bias.push_back(static_cast<float>(b / ys));
    }
    io.dst = y_type == DType::Int8 ? dt::s8 : dt::u8;
    io.dst_zero_point = static_cast<int32_t>(constant(R::YZeroPoint) ? constant(R::YZeroPoint)->scalar_as_double(0) : 0);
  }
  try {
    return std::make_unique<MatmulIntegerKernel>(numel_of(a_dims) / K, K, N, a_type == DType::Int8, *b, std::move(io));
  } catch (const dnnl::error& e) {
    return KernelSelection::declined(std::string("oneDNN has no int8 matmul for it: ") + e.what());
  }
}

}  // namespace fusor::cpu
