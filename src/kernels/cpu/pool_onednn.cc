// MaxPool and AveragePool (float32, 2-D, no dilation, no Indices output) on oneDNN pooling, and
// MaxPool on uint8/int8 (a QDQ model's QuantizedMaxPool, whose maximum is the integers').
// oneDNN's plain-NCHW pooling is a slow generic loop, so src is reordered per run into the
// channel-blocked layout (nChw8c / nChw16c) its JIT pooling uses, and dst back to NCHW, in
// scratch. ceil_mode becomes extra right padding; AveragePool refuses
// the ceil_mode case with count_include_pad, whose divisor conventions differ.
#include <optional>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"

namespace fusor::cpu {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

std::unique_ptr<Kernel> make_pool_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  const bool is_max = n.op == Op::MaxPool;
  const DType type = r.inputs.empty() ? DType::Undefined : r.inputs[0].dtype;
  const bool integer = is_max && (type == DType::UInt8 || type == DType::Int8);
  if ((n.op != Op::MaxPool && n.op != Op::AveragePool) || (type != DType::Float32 && !integer) ||
      used_outputs(r) != 1 || r.outputs[0].dtype != type)
    return nullptr;
  const dt data_type = type == DType::Float32 ? dt::f32 : type == DType::UInt8 ? dt::u8 : dt::s8;
  const Dims& x = r.inputs[0].dims;
  const Dims& y = r.outputs[0].dims;
  if (x.size() != 4 || y.size() != 4 || y[0] != x[0] || y[1] != x[1]) return nullptr;
  auto k = n.attr_ints("kernel_shape");
  auto strides = n.attr_ints("strides", {1, 1});
  auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  auto dil = n.attr_ints("dilations", {1, 1});
  const bool ceil = n.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = n.attr_int("count_include_pad", 0) != 0;
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (k.size() != 2 || strides.size() != 2 || pads.size() != 4 || dil != std::vector<int64_t>{1, 1}) return nullptr;
  if (n.attr_int("storage_order", 0) != 0) return nullptr;
  if (auto_pad == "VALID") pads = {0, 0, 0, 0};
  else if (auto_pad != "NOTSET") return nullptr;
  memory::dims pr{pads[2], pads[3]};
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x[2 + i], out = y[2 + i];
    const int64_t floor_out = (in + pads[i] + pads[i + 2] - k[i]) / strides[i] + 1;
    if (out != floor_out) {
      if (!ceil || out != floor_out + 1) return nullptr;
      if (!is_max && include_pad) return nullptr;
      // The last window must start inside the input or the left padding.
      if ((out - 1) * strides[i] >= in + pads[i]) return nullptr;
      pr[i] = (out - 1) * strides[i] + k[i] - in - pads[i];
    }
  }
  auto alg = is_max ? dnnl::algorithm::pooling_max
                    : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  memory::desc src(memory::dims(x.begin(), x.end()), data_type, tag::nchw);
  memory::desc dst(memory::dims(y.begin(), y.end()), data_type, tag::nchw);
  memory::dims kd{k[0], k[1]}, st{strides[0], strides[1]}, pl{pads[0], pads[1]};
  std::string key = std::string("pool|") + (is_max ? "max" : include_pad ? "avgi" : "avge") + "|" +
                    onednn::md_key(src) + "|" + onednn::md_key(dst) + "|" + onednn::dims_key(kd) + "|" +
                    onednn::dims_key(st) + "|" + onednn::dims_key(pl) + "|" + onednn::dims_key(pr);
  try {
    auto e = onednn::cached_as<PlainIoEntry>(key, [&] {
      auto& eng = onednn::engine();
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      auto make_pd = [&](const memory::desc& s, const memory::desc& d) {
        return dnnl::pooling_forward::primitive_desc(
            dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, alg, s, d, st, kd, pl, pr), attr, eng);
      };
      // oneDNN's plain-layout pooling is a slow generic loop: prefer the layout the convolutions
      // around it pick, channels-last with AVX-512 (brgconv), else 8-channel blocks, so that
      // the values between them stay in it (plan/layouts.h).
      const tag blocked = std::string(kIsa) == "avx512" ? tag::nhwc : tag::nChw8c;
      dnnl::pooling_forward::primitive_desc pd;
      try {
        pd = make_pd(memory::desc(src.dims(), data_type, blocked), memory::desc(dst.dims(), data_type, tag::any));
      } catch (const dnnl::error&) {
        pd = make_pd(src, dst);
      }
      return plain_io_entry(dnnl::pooling_forward(pd), pd, src, dst);
    });
    return std::make_unique<PlainIoKernel>(OnednnPlainIo(e, src, dst, {}),
                                        std::string(is_max ? "maxpool" : "avgpool") + "2d_" +
                                            (type == DType::Float32 ? "f32" : type == DType::UInt8 ? "u8" : "s8") + "_onednn",
                                        -1, is_max && type == DType::Float32);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
