// QuantizedConv (made by fuse_quantized): a QDQ Conv unit on oneDNN's int8 convolution. u8 or
// s8 x with its zero point (a oneDNN source zero point, under which padding is the zero point as
// DequantizeLinear's zero is), constant s8 weights packed once, int32 accumulation, then the
// requantizing epilogue in oneDNN's output stage:
//   y = saturate(round_half_even(out_scale[c] * (acc + bias[c]) [relu]) + y_zero_point)
// with out_scale[c] = x_scale * w_scale[c] / y_scale and the bias in accumulator units
// (DequantizeLinear(B) / (x_scale * w_scale[c])). That is QuantizeLinear(Conv(...)) of the unit
// computed once in float32 instead of through float32 dequantized operands, so a tie may round
// the other way: the gate allows one quantization step (check/compare.h).
//
// Without VNNI, u8 x s8 products go through vpmaddubsw, which saturates (int8_support.h): then,
// as for ConvInteger, s8 activations or weights that may saturate decline and the unit runs as
// its body.
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/common.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/int8_support.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"
#include "passes/fused_kinds.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;
using R = QuantizedOperand;

// The unit's operands by role, read through the node's "operands" attribute.
struct Operands {
  const KernelRequest& r;
  std::vector<int64_t> at;
  bool has(R role) const { return at[static_cast<size_t>(role)] >= 0; }
  size_t index(R role) const { return static_cast<size_t>(at[static_cast<size_t>(role)]); }
  const Tensor* constant(R role) const { return has(role) ? r.constants[index(role)] : nullptr; }
  double scalar(R role) const { return has(role) ? constant(role)->scalar_as_double(0) : 0.0; }
};

dt int8_type(DType t) { return t == DType::Int8 ? dt::s8 : dt::u8; }

// A runtime-valued zero point set once: oneDNN takes a constant through the same argument.
memory zero_point_memory(int32_t value) {
  memory m(memory::desc({1}, dt::s32, tag::a), onednn::engine());
  *static_cast<int32_t*>(m.get_data_handle()) = value;
  return m;
}

}  // namespace

KernelSelection make_quantized_conv_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  Operands ops{r, n.attr_ints("operands")};
  if (ops.at.size() != static_cast<size_t>(R::Count)) return KernelSelection::declined("no operands attribute");
  for (int64_t i : ops.at)
    if (i >= static_cast<int64_t>(r.inputs.size())) return KernelSelection::declined("an operand index is out of range");
  for (R role : {R::XScale, R::XZeroPoint, R::W, R::WScale, R::WZeroPoint, R::Bias, R::BiasScale, R::YScale, R::YZeroPoint})
    if (ops.has(role) && !ops.constant(role)) return KernelSelection::declined("a parameter is not a plan-time constant");
  if (!ops.has(R::X) || !ops.has(R::W) || !ops.has(R::XScale) || !ops.has(R::WScale) || !ops.has(R::YScale))
    return KernelSelection::declined("an operand is missing");
  const DType x_type = r.inputs[ops.index(R::X)].dtype, y_type = r.outputs[0].dtype;
  const Tensor* w = ops.constant(R::W);
  if ((x_type != DType::UInt8 && x_type != DType::Int8) || (y_type != DType::UInt8 && y_type != DType::Int8) ||
      w->dtype() != DType::Int8)
    return KernelSelection::declined("operands are not u8/s8 with s8 weights");
  const auto shape = onednn_conv_shape(n, r.inputs[ops.index(R::X)].dims, w->dims(), r.outputs[0].dims);
  if (!shape) return KernelSelection::declined("the convolution's geometry is outside oneDNN's");
  const bool x_signed = x_type == DType::Int8;
  if (x_signed && !onednn_int8_has_vnni())
    return KernelSelection::declined("s8 activations without VNNI are not exact in oneDNN");
  const int64_t OC = shape->OC, taps = w->numel() / (w->dim(0) * w->dim(1));
  if (!onednn_int8_has_vnni() && int8_weights_may_saturate(w->data<int8_t>(), w->dim(0), w->dim(1), taps))
    return KernelSelection::declined("weights whose products saturate vpmaddubsw without VNNI");

  // The epilogue's per-channel scale and the bias in accumulator units.
  const Tensor* w_scale = ops.constant(R::WScale);
  if (w_scale->numel() != 1 && w_scale->numel() != OC) return KernelSelection::declined("the weight scale's size");
  const double x_scale = ops.scalar(R::XScale), y_scale = ops.scalar(R::YScale);
  std::vector<float> out_scale(static_cast<size_t>(OC)), bias;
  std::vector<double> acc_unit(static_cast<size_t>(OC));
  for (int64_t c = 0; c < OC; ++c) {
    // Products as DequantizeLinear computes them, in float32.
    const float ws = static_cast<float>(w_scale->scalar_as_double(w_scale->numel() == 1 ? 0 : c));
    acc_unit[static_cast<size_t>(c)] = static_cast<double>(static_cast<float>(x_scale)) * ws;
    out_scale[static_cast<size_t>(c)] = static_cast<float>(acc_unit[static_cast<size_t>(c)] / y_scale);
  }
  if (const Tensor* b = ops.constant(R::Bias)) {
    if (b->numel() != OC) return KernelSelection::declined("the bias's size");
    const Tensor* b_scale = ops.constant(R::BiasScale);
    if (b_scale && b_scale->numel() != 1 && b_scale->numel() != OC) return KernelSelection::declined("the bias scale's size");
    for (int64_t c = 0; c < OC; ++c) {
      const float value = b_scale ? static_cast<float>(b->scalar_as_double(c)) *
                                        static_cast<float>(b_scale->scalar_as_double(b_scale->numel() == 1 ? 0 : c))
                                  : static_cast<float>(b->scalar_as_double(c));
      bias.push_back(static_cast<float>(value / acc_unit[static_cast<size_t>(c)]));
    }
  }
  const auto x_zp = static_cast<int32_t>(ops.scalar(R::XZeroPoint));
  const auto y_zp = static_cast<int32_t>(ops.scalar(R::YZeroPoint));
  const bool relu = n.attr_string("activation", "none") == "relu";
  const bool per_channel = w_scale->numel() != 1;

  const memory::desc src_user(shape->src, int8_type(x_type), tag::nchw), dst_user(shape->dst, int8_type(y_type), tag::nchw);
  const memory::desc w_user(shape->weights, dt::s8, shape->group > 1 ? tag::goihw : tag::oihw);
  const memory::desc bias_md = bias.empty() ? memory::desc() : memory::desc({OC}, dt::f32, tag::x);
  // Scales are baked into the primitive: they are part of the key.
  std::string key = std::string("qconv|") + (x_signed ? "s8|" : "u8|") + (y_type == DType::Int8 ? "s8|" : "u8|") +
                     shape->key() + (bias.empty() ? "" : "|b") + (relu ? "|relu" : "") + (x_zp ? "|xzp" : "") +
                     (y_zp ? "|yzp" : "") + "|s";
  for (float s : out_scale) key += "," + std::to_string(s);
  try {
    auto e = onednn::cached_as<PlainIoEntry>(key, [&] {
      memory::desc src_any(shape->src, src_user.data_type(), tag::any), dst_any(shape->dst, dst_user.data_type(), tag::any),
          w_any(shape->weights, dt::s8, tag::any);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      attr.set_output_scales(per_channel ? 1 << 1 : 0, per_channel ? out_scale : std::vector<float>{out_scale[0]});
      if (x_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      if (y_zp) attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
      if (relu) {
        dnnl::post_ops po;
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
        attr.set_post_ops(po);
      }
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_direct;
      auto desc = bias.empty() ? dnnl::convolution_forward::desc(prop, alg, src_any, w_any, dst_any, shape->strides,
                                                                 shape->dilations, shape->pad_l, shape->pad_r)
                               : dnnl::convolution_forward::desc(prop, alg, src_any, w_any, bias_md, dst_any,
                                                                 shape->strides, shape->dilations, shape->pad_l,
                                                                 shape->pad_r);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, onednn::engine());
      return plain_io_entry(dnnl::convolution_forward(pd), pd, src_user, dst_user);
    });
    ConstantArgs args;
    args.weights = packed_weights(w->raw(), w_user, e->weights);
    args.memories[DNNL_ARG_WEIGHTS] = args.weights->memory();
    if (!bias.empty()) {
      memory b(bias_md, onednn::engine());
      std::copy(bias.begin(), bias.end(), static_cast<float*>(b.get_data_handle()));
      args.memories[DNNL_ARG_BIAS] = b;
    }
    if (x_zp) args.memories[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zero_point_memory(x_zp);
    if (y_zp) args.memories[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST] = zero_point_memory(y_zp);
    std::string name = std::string("qconv2d_") + (x_signed ? "s8" : "u8") + "s8" + (y_type == DType::Int8 ? "s8" : "u8") +
                       (shape->group > 1 ? "_grouped" : "") + (bias.empty() ? "" : "_bias") + (relu ? "_relu" : "") +
                       "_onednn_packed";
    return std::make_unique<PlainIoKernel>(OnednnPlainIo(e, src_user, dst_user, std::move(args)), name);
  } catch (const dnnl::error& err) {
    return KernelSelection::declined(std::string("oneDNN has no int8 convolution for it: ") + err.what());
  }
}

}  // namespace fusor::cpu
