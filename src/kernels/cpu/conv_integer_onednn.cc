// ConvInteger on oneDNN's int8 convolution: u8 or s8 X (NCHW or NCW), constant s8 W packed once,
// int32 Y, exact. X's zero point (a scalar, constant or produced at run time) is a runtime
// zero-point attribute, under which oneDNN pads with the zero point as ONNX does. W's zero point
// must be absent or all zeros (symmetric weights); otherwise, for u8 weights (none in oneDNN 2.6)
// and, without VNNI, for s8 inputs or weights whose products saturate vpmaddubsw
// (int8_support.h), the reference runs.
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/common.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/int8_support.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

class ConvIntegerKernel final : public Kernel {
 public:
  ConvIntegerKernel(OnednnPlainIo io, std::shared_ptr<int32_t> zp, std::string name)
      : io_(std::move(io)), zp_(std::move(zp)), name_(std::move(name)) {}
  size_t scratch_bytes() const override { return io_.scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    if (zp_) *zp_ = static_cast<int32_t>(in[2].scalar_as_double(0));
    io_.run(in[0].raw(), out[0].raw(), scratch);
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return true; }

 private:
  OnednnPlainIo io_;
  std::shared_ptr<int32_t> zp_;  // where the zero-point memory points; set before each run
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_integer_kernel(const KernelRequest& r) {
  const auto ops = int8_operands(r, Op::ConvInteger);
  if (!ops) return nullptr;
  const Tensor* w = ops->weights;
  const bool x_signed = ops->activations_signed, has_zp = ops->has_zero_point;
  const auto shape = onednn_conv_shape(r.node, r.inputs[0].dims, r.inputs[1].dims, r.outputs[0].dims);
  if (!shape || w->rank() < 3) return nullptr;
  // Without VNNI oneDNN's convolution takes s8 inputs by halving the weights ("sa0.5" in its
  // verbose output) and scaling back, which is not exact in int32: measured off by ~2% here.
  if (x_signed && !onednn_int8_has_vnni()) return nullptr;
  // Reduction pairs run along input channels (oneDNN's 4-channel groups), per output channel and tap.
  const int64_t taps = w->numel() / (w->dim(0) * w->dim(1));
  if (!onednn_int8_has_vnni() && int8_weights_may_saturate(w->data<int8_t>(), w->dim(0), w->dim(1), taps))
    return nullptr;
  const bool grouped = shape->group > 1;
  const memory::desc src_user(shape->src, x_signed ? dt::s8 : dt::u8, tag::nchw);
  const memory::desc dst_user(shape->dst, dt::s32, tag::nchw);
  const memory::desc w_user(shape->weights, dt::s8, grouped ? tag::goihw : tag::oihw);
  const std::string key = std::string("conv_int|") + (x_signed ? "s8|" : "u8|") + shape->key() + (has_zp ? "|zp" : "");
  try {
    auto e = onednn::cached_as<PlainIoEntry>(key, [&] {
      memory::desc src_any(shape->src, src_user.data_type(), tag::any), dst_any(shape->dst, dt::s32, tag::any),
          w_any(shape->weights, dt::s8, tag::any);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      if (has_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          src_any, w_any, dst_any, shape->strides, shape->dilations, shape->pad_l,
                                          shape->pad_r),
          attr, onednn::engine());
      return plain_io_entry(dnnl::convolution_forward(pd), pd, src_user, dst_user);
    });
    ConstantArgs args;
    args.weights = packed_weights(w->raw(), w_user, e->weights);
    args.memories[DNNL_ARG_WEIGHTS] = args.weights->memory();
    std::shared_ptr<int32_t> zp = has_zp ? std::make_shared<int32_t>(0) : nullptr;
    if (zp)
      args.memories[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] =
          memory(memory::desc({1}, dt::s32, tag::a), onednn::engine(), zp.get());
    std::string name = std::string("conv2d_integer_") + (x_signed ? "s8" : "u8") + "s8" + (grouped ? "_grouped" : "") +
                       "_onednn_packed";
    return std::make_unique<ConvIntegerKernel>(OnednnPlainIo(e, src_user, dst_user, std::move(args)), std::move(zp),
                                               name);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
