// The float convolutions behind Conv and FusedConv: one builder, so the fused kernel is the
// plain one plus post-ops.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/epilogue_activation.h"
#include "kernels/kernel.h"

namespace fusor::cpu {

// A Conv-like node's geometry as oneDNN takes it (1-D as 2-D with H = 1; grouped weights goihw),
// shared by the float and the integer convolutions.
struct OnednnConvShape {
  dnnl::memory::dims src, weights, dst, strides, dilations, pad_l, pad_r;
  std::vector<int64_t> kernel;  // spatial kernel size
  int64_t group = 1, C = 0, OC = 0;
  std::string key() const;  // for primitive cache keys
};
// From the node's attributes (kernel_shape, strides, pads, dilations, group, auto_pad) and the
// bound dims of X, W and Y; nullopt when they are outside what oneDNN's convolution handles.
std::optional<OnednnConvShape> onednn_conv_shape(const Node& n, Dims x, Dims w, Dims y);

struct ConvEpilogue {
  bool has_bias = false;         // input 2 is the bias
  int residual = -1;             // input index of a tensor added to the result (sum post-op)
  std::string activation = "none";  // applied after the residual (see onednn_post_ops.h)
  float alpha = 0.f;             // leaky_relu's slope
};

// What fusor's own float convolution kernels (image input, Winograd) take from a request: float32
// X and plan-time constant W, one output, 4-D, a float32 constant bias of OC values when the
// epilogue has one, a residual of the output's shape, and an activation they apply; nullopt else.
struct OwnConvOperands {
  const Tensor* weights;
  const Tensor* bias;  // nullptr without one
  EpilogueActivation activation;
};
std::optional<OwnConvOperands> own_conv_operands(const KernelRequest& r, const ConvEpilogue& epilogue);

// A kernel for the convolution that r.node's attributes describe (kernel_shape, strides, pads,
// dilations, group, auto_pad) on inputs 0 (X) and 1 (W, a plan-time constant), followed by the
// epilogue; nullptr when the shapes or attributes are outside what it handles.
std::unique_ptr<Kernel> make_onednn_conv(const KernelRequest& r, const ConvEpilogue& epilogue);

// The same for an image's first layer (a few input channels, read NCHW, written channels-last:
// conv_image_input.cc); nullptr outside it.
std::unique_ptr<Kernel> make_image_input_conv(const KernelRequest& r, const ConvEpilogue& epilogue);

// The same for a 3x3 stride-1 layer as Winograd F(m x m, 3x3) (conv_winograd.cc), where oneDNN
// has no Winograd kernel of its own and the layer has enough tiles; `tile` (2 or 4: tests) sets m
// and drops those two conditions. nullptr outside it.
std::unique_ptr<Kernel> make_winograd_conv(const KernelRequest& r, const ConvEpilogue& epilogue, int tile = 0);

// The same for a 1x1 convolution on a 1x1 image (squeeze-and-excitation), as a GEMM on constant
// weights (conv_pointwise_gemm.cc); nullptr outside it.
std::unique_ptr<Kernel> make_pointwise_conv_gemm(const KernelRequest& r, const ConvEpilogue& epilogue);

// The kernel for a float Conv or FusedConv: the image-input, pointwise-GEMM or Winograd kernel
// where one applies, else oneDNN's.
std::unique_ptr<Kernel> make_float_conv(const KernelRequest& r, const ConvEpilogue& epilogue);

}  // namespace fusor::cpu
