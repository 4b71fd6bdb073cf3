// Conv (float32, 1-D or 2-D, groups, pads, strides, dilations, bias) on oneDNN's convolution.
// Weights are a plan-time constant, reordered once into the layout the primitive prefers; src
// and dst stay plain NCHW for the caller and are reordered per run (in scratch) when oneDNN
// picks a blocked layout, unless the plan keeps them in that layout (plan/layouts.h). 3x3
// stride-1 layers use Winograd where oneDNN has it (winograd_pays). FusedConv adds post-ops: the
// residual as a sum (dst starts as the residual, reordered into dst's layout), then an eltwise
// activation.
#include "kernels/cpu/conv_onednn.h"

#include <optional>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"
#include "kernels/cpu/onednn_post_ops.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Winograd (oneDNN's AVX-512 kernels, F(2x2, 3x3) or F(4x4, 3x3)) does 2.25-4x fewer multiplies
// than a direct 3x3 stride-1 convolution. Measured on ResNet-18 (2 threads, alternated runs):
// 1.27x the whole model's throughput at batch 1, 1.30x at batch 8, its outputs as close to the
// reference kernels' as the direct ones (max |diff| 5.7e-6 against 7.6e-6, outputs up to 6).
// It keeps 16-channel blocks (nChw16c), so channel counts must be multiples of 16.
// FUSOR_CONV_WINOGRAD=0 keeps every convolution direct.
bool winograd_pays(const std::vector<int64_t>& k, const std::vector<int64_t>& strides, const std::vector<int64_t>& dil,
                   int64_t group, int64_t C, int64_t OC) {
  static const bool on = env_switch_on("FUSOR_CONV_WINOGRAD");
  return on && k.size() == 2 && k[0] == 3 && k[1] == 3 && strides[0] == 1 && strides[1] == 1 && dil[0] == 1 &&
         dil[1] == 1 && group == 1 && C % 16 == 0 && OC % 16 == 0;
}

}  // namespace

std::string OnednnConvShape::key() const {
  return onednn::dims_key(src) + "|" + onednn::dims_key(weights) + "|" + onednn::dims_key(dst) + "|" +
         onednn::dims_key(strides) + "|" + onednn::dims_key(dilations) + "|" + onednn::dims_key(pad_l) + "|" +
         onednn::dims_key(pad_r);
}

std::optional<OnednnConvShape> onednn_conv_shape(const Node& n, Dims x, Dims wd, Dims y) {
  const size_t rank = x.size();
  if ((rank != 3 && rank != 4) || wd.size() != rank || y.size() != rank) return std::nullopt;
  const size_t sp = rank - 2;
  std::vector<int64_t> k(wd.begin() + 2, wd.end());
  auto ks = n.attr_ints("kernel_shape", k);
  if (ks != k) return std::nullopt;
  auto strides = n.attr_ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  const int64_t group = n.attr_int("group", 1);
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp || group < 1) return std::nullopt;
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < sp; ++i) {
    const int64_t in = x[2 + i], eff = (k[i] - 1) * dil[i] + 1;
    if (auto_pad == "VALID") {
      pads[i] = pads[i + sp] = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in + strides[i] - 1) / strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + eff - in);
      pads[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + sp] = total - pads[i];
    } else if (auto_pad != "NOTSET") {
      return std::nullopt;
    }
    if ((in + pads[i] + pads[i + sp] - eff) / strides[i] + 1 != y[2 + i]) return std::nullopt;
  }
  const int64_t C = x[1], OC = wd[0];
  if (C % group || OC % group || wd[1] != C / group || y[1] != OC) return std::nullopt;
  // 1-D convolutions run as 2-D with H = 1.
  if (sp == 1) {
    x.insert(x.begin() + 2, 1);
    wd.insert(wd.begin() + 2, 1);
    y.insert(y.begin() + 2, 1);
    k.insert(k.begin(), 1);
    strides.insert(strides.begin(), 1);
    dil.insert(dil.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  OnednnConvShape s;
  s.src = memory::dims(x.begin(), x.end());
  s.dst = memory::dims(y.begin(), y.end());
  s.weights = group > 1 ? memory::dims{group, OC / group, C / group, wd[2], wd[3]} : memory::dims(wd.begin(), wd.end());
  s.strides = {strides[0], strides[1]};
  s.dilations = {dil[0] - 1, dil[1] - 1};
  s.pad_l = {pads[0], pads[1]};
  s.pad_r = {pads[2], pads[3]};
  s.kernel = k;
  s.group = group;
  s.C = C;
  s.OC = OC;
  return s;
}

std::optional<OwnConvOperands> own_conv_operands(const KernelRequest& r, const ConvEpilogue& epi) {
  if (r.inputs.size() < 2 || !input_is(r, 0, DType::Float32) || !input_is(r, 1, DType::Float32) ||
      used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32 || r.inputs[0].dims.size() != 4)
    return std::nullopt;
  if (epi.residual >= 0 && (!input_is(r, static_cast<size_t>(epi.residual), DType::Float32) ||
                            r.inputs[static_cast<size_t>(epi.residual)].dims != r.outputs[0].dims))
    return std::nullopt;
  const auto act = epilogue_activation(epi.activation);
  const Tensor* w = constant_input(r, 1);
  const Tensor* b = epi.has_bias ? constant_input(r, 2) : nullptr;
  if (!act || !w || (epi.has_bias && (!b || b->dtype() != DType::Float32 || b->numel() != r.inputs[1].dims[0])))
    return std::nullopt;
  return OwnConvOperands{w, b, *act};
}

std::unique_ptr<Kernel> make_onednn_conv(const KernelRequest& r, const ConvEpilogue& epi) {
  const Node& n = r.node;
  if (r.inputs.size() < 2 || !input_is(r, 0, DType::Float32) ||
      !input_is(r, 1, DType::Float32) || used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32)
    return nullptr;
  const Tensor* w = constant_input(r, 1);
  const bool has_bias = epi.has_bias;
  if (has_bias && !has_input(r, 2)) return nullptr;
  if (epi.residual >= 0 && (!input_is(r, static_cast<size_t>(epi.residual), DType::Float32) ||
                            r.inputs[static_cast<size_t>(epi.residual)].dims != r.outputs[0].dims))
    return nullptr;
  const auto alg = onednn::eltwise_for(epi.activation);
  if (epi.activation != "none" && !alg) return nullptr;
  const Tensor* b = has_bias ? constant_input(r, 2) : nullptr;
  if (!w || (has_bias && (!b || b->dtype() != DType::Float32 || b->numel() != r.inputs[1].dims[0]))) return nullptr;
  const auto shape = onednn_conv_shape(n, r.inputs[0].dims, r.inputs[1].dims, r.outputs[0].dims);
  if (!shape) return nullptr;
  // Named references, not a structured binding: clang 14 cannot capture those in the lambda below.
  const memory::dims &src_d = shape->src, &w_d = shape->weights, &dst_d = shape->dst, &st = shape->strides,
                     &dl = shape->dilations, &pl = shape->pad_l, &pr = shape->pad_r;
  const int64_t group = shape->group, C = shape->C, OC = shape->OC;
  const std::vector<int64_t> strides(st.begin(), st.end()), dil{dl[0] + 1, dl[1] + 1};
  const std::vector<int64_t>& k = shape->kernel;
  memory::desc src_user(src_d, dt::f32, tag::nchw), dst_user(dst_d, dt::f32, tag::nchw);
  memory::desc w_user(w_d, dt::f32, group > 1 ? tag::goihw : tag::oihw);
  memory::desc bias_md = has_bias ? memory::desc({OC}, dt::f32, tag::x) : memory::desc();
  std::string key = "conv|" + shape->key() + (has_bias ? "|b" : "") + (epi.residual >= 0 ? "|sum" : "") + "|" +
                    epi.activation + std::to_string(epi.alpha);
  try {
    dnnl::convolution_forward::primitive_desc pd;
    auto e = onednn::cached_as<PlainIoEntry>(key, [&] {
      memory::desc src_any(src_d, dt::f32, tag::any), dst_any(dst_d, dt::f32, tag::any),
          w_any(w_d, dt::f32, tag::any);
      auto desc = [&](dnnl::algorithm a) {
        return has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, a, src_any, w_any,
                                                          bias_md, dst_any, st, dl, pl, pr)
                        : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, a, src_any, w_any,
                                                          dst_any, st, dl, pl, pr);
      };
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::post_ops po;
      if (epi.residual >= 0) po.append_sum(1.f);
      if (alg) po.append_eltwise(1.f, *alg, epi.alpha, 0.f);
      attr.set_post_ops(po);
      auto conv_pd = [&] {
        if (winograd_pays(k, strides, dil, group, C, OC)) try {
            return dnnl::convolution_forward::primitive_desc(desc(dnnl::algorithm::convolution_winograd), attr,
                                                             onednn::engine());
          } catch (const dnnl::error&) {  // no Winograd kernel for this ISA or shape: direct
          }
        return dnnl::convolution_forward::primitive_desc(desc(dnnl::algorithm::convolution_direct), attr,
                                                         onednn::engine());
      }();
      auto ent = plain_io_entry(dnnl::convolution_forward(conv_pd), conv_pd, src_user, dst_user,
                                /*dst_in=*/epi.residual >= 0);
      ent->winograd = std::string(conv_pd.impl_info_str()).find("wino") != std::string::npos;
      return ent;
    });
    auto args = packed_weights_and_bias(*e, w_user, *w, bias_md, b);
    std::string name = std::string("conv2d_f32") + (group > 1 ? "_grouped" : "") + (has_bias ? "_bias" : "") +
                       (epi.residual >= 0 ? "_residual" : "") + (alg ? "_" + epi.activation : "") + (e->winograd ? "_winograd" : "") +
                       "_onednn_packed";
    return std::make_unique<PlainIoKernel>(OnednnPlainIo(e, src_user, dst_user, std::move(args)), name,
                                           epi.residual, alg == dnnl::algorithm::eltwise_relu && epi.alpha == 0.f);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::unique_ptr<Kernel> make_float_conv(const KernelRequest& r, const ConvEpilogue& epi) {
  if (auto k = make_image_input_conv(r, epi)) return k;
  if (auto k = make_pointwise_conv_gemm(r, epi)) return k;
  if (auto k = make_winograd_conv(r, epi)) return k;
  return make_onednn_conv(r, epi);
}

std::unique_ptr<Kernel> make_conv_kernel(const KernelRequest& r) {
  if (r.node.op != Op::Conv) return nullptr;
  return make_float_conv(r, ConvEpilogue{.has_bias = has_input(r, 2)});
}

}  // namespace fusor::cpu
