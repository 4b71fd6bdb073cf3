// Per-file kernel factories of the CPU backend. Each returns an optimized kernel for the request,
// or nullptr when the node's dtype, shapes or attributes are outside what the kernel handles
// (the reference kernel then runs); fused kinds decline with a reason where they have one (the
// plan then puts the body's nodes back and reports it). backend.cc maps ops and kinds to these.
#pragma once
#include <memory>
#include <string>

#include "kernels/backend.h"

namespace fusor::cpu {

std::unique_ptr<Kernel> make_matmul_kernel(const KernelRequest& r);      // matmul_onednn.cc
std::unique_ptr<Kernel> make_gemm_kernel(const KernelRequest& r);        // matmul_onednn.cc
std::unique_ptr<Kernel> make_matmul_integer_kernel(const KernelRequest& r);  // matmul_integer_onednn.cc
std::unique_ptr<Kernel> make_conv_kernel(const KernelRequest& r);        // conv_onednn.cc
std::unique_ptr<Kernel> make_conv_integer_kernel(const KernelRequest& r);  // conv_integer_onednn.cc
std::unique_ptr<Kernel> make_quantize_linear_kernel(const KernelRequest& r);  // quantize_linear.cc
std::unique_ptr<Kernel> make_dynamic_quantize_linear_kernel(const KernelRequest& r);  // quantize_linear.cc
std::unique_ptr<Kernel> make_qlinear_matmul_kernel(const KernelRequest& r);  // qlinear_onednn.cc
std::unique_ptr<Kernel> make_qlinear_conv_kernel(const KernelRequest& r);    // qlinear_onednn.cc
std::unique_ptr<Kernel> make_conv_transpose_kernel(const KernelRequest& r);  // deconv_onednn.cc
std::unique_ptr<Kernel> make_pool_kernel(const KernelRequest& r);        // pool_onednn.cc
std::unique_ptr<Kernel> make_unary_kernel(const KernelRequest& r);       // unary.cc
std::unique_ptr<Kernel> make_binary_kernel(const KernelRequest& r);      // binary.cc
std::unique_ptr<Kernel> make_softmax_kernel(const KernelRequest& r);     // softmax.cc
std::unique_ptr<Kernel> make_reduce_kernel(const KernelRequest& r);      // reduce.cc
std::unique_ptr<Kernel> make_layer_norm_kernel(const KernelRequest& r);  // layer_norm.cc
std::unique_ptr<Kernel> make_instance_norm_kernel(const KernelRequest& r);  // layer_norm.cc
std::unique_ptr<Kernel> make_transpose_kernel(const KernelRequest& r);   // transpose.cc
std::unique_ptr<Kernel> make_gather_kernel(const KernelRequest& r);      // gather.cc
std::unique_ptr<Kernel> make_scatter_nd_kernel(const KernelRequest& r);  // scatter_nd.cc
std::unique_ptr<Kernel> make_expand_kernel(const KernelRequest& r);      // expand.cc
std::unique_ptr<Kernel> make_slice_kernel(const KernelRequest& r);       // slice.cc
std::unique_ptr<Kernel> make_concat_kernel(const KernelRequest& r);      // concat_split.cc
std::unique_ptr<Kernel> make_split_kernel(const KernelRequest& r);       // concat_split.cc
std::unique_ptr<Kernel> make_resize_kernel(const KernelRequest& r);      // resize_nearest.cc
std::unique_ptr<Kernel> make_cached_attention_kernel(const KernelRequest& r);  // cached_attention.cc

// Fused nodes (op Fused, domain "fusor"), by kind (the node's op_type).
KernelSelection make_fused_elementwise_kernel(const KernelRequest& r);  // fused_elementwise.cc: Elementwise
KernelSelection make_fused_matmul_kernel(const KernelRequest& r);       // fused_matmul.cc: FusedMatMul
KernelSelection make_fused_conv_kernel(const KernelRequest& r);         // fused_conv.cc: FusedConv
KernelSelection make_attention_kernel(const KernelRequest& r);          // attention.cc: Attention
KernelSelection make_quantized_conv_kernel(const KernelRequest& r);     // quantized_conv_onednn.cc: QuantizedConv
KernelSelection make_quantized_matmul_kernel(const KernelRequest& r);   // matmul_integer_onednn.cc: QuantizedMatMul
// oneDNN's implementation behind an int8 matmul kernel (MatMulInteger, QuantizedMatMul), e.g.
// "brg:avx512_core_amx_int8"; empty for any other kernel. Tests check no attribute pushes it
// onto the jit gemm, which is several times slower (docs/benchmarks.md, issue #19).
std::string int8_matmul_implementation(const Kernel& k);                 // matmul_integer_onednn.cc
KernelSelection make_group_norm_kernel(const KernelRequest& r);         // group_norm.cc: GroupNorm
KernelSelection make_rotary_kernel(const KernelRequest& r);             // rotary.cc: Rotary

}  // namespace fusor::cpu
