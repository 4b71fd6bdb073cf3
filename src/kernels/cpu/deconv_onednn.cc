// ConvTranspose (float32, 1 to 3 spatial dims, groups, pads, strides, dilations, output_padding,
// bias) on oneDNN's deconvolution. The geometry is ConvTranspose's own (ir/conv_transpose_geometry.h):
// oneDNN's left padding is pad_begin and its right padding whatever makes the output size
// (negative when output_padding or output_shape grows the end). ONNX's W, [C, M / group, k...],
// is oneDNN's iohw / giohw order, reordered once into the layout the primitive prefers. src and
// dst stay plain for the caller, as with Conv (onednn_plain_io.h).
#include "ir/conv_transpose_geometry.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"

namespace fusor::cpu {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

std::unique_ptr<Kernel> make_conv_transpose_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (n.op != Op::ConvTranspose || r.inputs.size() < 2 || !input_is(r, 0, DType::Float32) ||
      !input_is(r, 1, DType::Float32) || used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32)
    return nullptr;
  const Tensor* w = constant_input(r, 1);
  const bool has_bias = has_input(r, 2);
  const Tensor* b = has_bias ? constant_input(r, 2) : nullptr;
  if (!w || (has_bias && (!b || b->dtype() != DType::Float32))) return nullptr;
  Dims x = r.inputs[0].dims, wd = r.inputs[1].dims, y = r.outputs[0].dims;
  const size_t rank = x.size();
  if (rank < 3 || rank > 5 || wd.size() != rank || y.size() != rank) return nullptr;
  const int64_t group = n.attr_int("group", 1);
  const int64_t C = x[1], OC = y[1];
  if (group < 1 || C % group || wd[0] != C || wd[1] * group != OC) return nullptr;
  std::vector<TransposedAxis> axes;
  try {
    axes = conv_transpose_axes(n, x, Dims(wd.begin() + 2, wd.end()));
  } catch (const Error&) {
    return nullptr;
  }
  memory::dims k, st, dl, pl, pr;
  for (size_t i = 0; i < axes.size(); ++i) {
    const TransposedAxis& a = axes[i];
    if (a.out != y[2 + i]) return nullptr;
    k.push_back(a.kernel);
    st.push_back(a.stride);
    dl.push_back(a.dilation - 1);
    pl.push_back(a.pad_begin);
    pr.push_back((a.in - 1) * a.stride + (a.kernel - 1) * a.dilation + 1 - a.pad_begin - a.out);
  }
  // 1-D runs as 2-D with H = 1.
  if (rank == 3) {
    x.insert(x.begin() + 2, 1);
    y.insert(y.begin() + 2, 1);
    k.insert(k.begin(), 1);
    st.insert(st.begin(), 1);
    dl.insert(dl.begin(), 0);
    pl.insert(pl.begin(), 0);
    pr.insert(pr.begin(), 0);
  }
  const bool is3d = x.size() == 5;
  memory::dims src_d(x.begin(), x.end()), dst_d(y.begin(), y.end());
  memory::dims w_d = group > 1 ? memory::dims{group, OC / group, C / group} : memory::dims{OC, C};
  w_d.insert(w_d.end(), k.begin(), k.end());
  const tag plain = is3d ? tag::ncdhw : tag::nchw;
  const tag w_tag = group > 1 ? (is3d ? tag::giodhw : tag::giohw) : (is3d ? tag::iodhw : tag::iohw);
  memory::desc src_user(src_d, dt::f32, plain), dst_user(dst_d, dt::f32, plain);
  memory::desc w_user(w_d, dt::f32, w_tag);
  memory::desc bias_md = has_bias ? memory::desc({OC}, dt::f32, tag::x) : memory::desc();
  const std::string key = "deconv|" + onednn::dims_key(src_d) + "|" + onednn::dims_key(w_d) + "|" +
                          onednn::dims_key(dst_d) + "|" + onednn::dims_key(st) + "|" + onednn::dims_key(dl) + "|" +
                          onednn::dims_key(pl) + "|" + onednn::dims_key(pr) + (has_bias ? "|b" : "");
  try {
    auto e = onednn::cached_as<PlainIoEntry>(key, [&] {
      memory::desc src_any(src_d, dt::f32, tag::any), dst_any(dst_d, dt::f32, tag::any), w_any(w_d, dt::f32, tag::any);
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::deconvolution_direct;
      auto desc = has_bias ? dnnl::deconvolution_forward::desc(prop, alg, src_any, w_any, bias_md, dst_any, st, dl, pl, pr)
                           : dnnl::deconvolution_forward::desc(prop, alg, src_any, w_any, dst_any, st, dl, pl, pr);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::deconvolution_forward::primitive_desc pd(desc, attr, onednn::engine());
      return plain_io_entry(dnnl::deconvolution_forward(pd), pd, src_user, dst_user);
    });
    auto args = packed_weights_and_bias(*e, w_user, *w, bias_md, b);
    const std::string name = std::string("deconv") + (is3d ? "3d" : "2d") + "_f32" + (group > 1 ? "_grouped" : "") +
                             (has_bias ? "_bias" : "") + "_onednn_packed";
    return std::make_unique<PlainIoKernel>(OnednnPlainIo(e, src_user, dst_user, std::move(args)), name);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
