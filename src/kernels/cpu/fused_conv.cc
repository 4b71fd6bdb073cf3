// FusedConv (made by fuse_gemm_epilogue): inputs X, W, [bias], [residual]; the Conv's attributes
// plus has_bias, has_residual, activation and alpha. The plain oneDNN convolution with a sum
// post-op for the residual and an eltwise post-op for the activation, in that order (or, for an
// image's first layer, the image-input kernel: conv_image_input.cc).
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/onednn_post_ops.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {

KernelSelection make_fused_conv_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  ConvEpilogue epi;
  epi.has_bias = n.attr_int("has_bias", 0) != 0;
  if (n.attr_int("has_residual", 0) != 0) epi.residual = epi.has_bias ? 3 : 2;
  epi.activation = n.attr_string("activation", "none");
  epi.alpha = onednn::eltwise_alpha(epi.activation, n.attr_float("alpha", 0.01f));
  return make_float_conv(r, epi);
}

}  // namespace fusor::cpu
