// The oneDNN convolution behind Conv and FusedConv: one builder, so the fused kernel is the
// plain one plus post-ops.
#pragma once
#include <memory>
#include <string>

#include "kernels/kernel.h"

namespace fusor::cpu {

struct ConvEpilogue {
  bool has_bias = false;         // input 2 is the bias
  int residual = -1;             // input index of a tensor added to the result (sum post-op)
  std::string activation = "none";  // applied after the residual (see onednn_post_ops.h)
  float alpha = 0.f;             // leaky_relu's slope
};

// A kernel for the convolution that r.node's attributes describe (kernel_shape, strides, pads,
// dilations, group, auto_pad) on inputs 0 (X) and 1 (W, a plan-time constant), followed by the
// epilogue; nullptr when the shapes or attributes are outside what it handles.
std::unique_ptr<Kernel> make_onednn_conv(const KernelRequest& r, const ConvEpilogue& epilogue);

}  // namespace fusor::cpu
