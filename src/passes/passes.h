// Every fusion pass, one per file. The order they run in is pipeline.cc's business.
#pragma once
#include "passes/fusion_context.h"

namespace fusor::passes {

void fuse_quantized(FusionContext& ctx);      // DequantizeLinear -> Conv -> QuantizeLinear -> int8 kernel
void fuse_layer_norm(FusionContext& ctx);     // decomposed LayerNorm -> LayerNorm
void fuse_group_norm(FusionContext& ctx);     // Reshape, InstanceNorm, Reshape, affine (+ SiLU) -> GroupNorm
void fuse_gelu(FusionContext& ctx);           // erf and tanh GELU -> Gelu
void fuse_attention(FusionContext& ctx);      // scores, scale, mask, softmax, x V -> Attention
void fuse_rotary(FusionContext& ctx);         // x cos + rotate_half(x) sin -> Rotary
void merge_projections(FusionContext& ctx);   // MatMuls sharing their input (Q, K, V) -> one GEMM
void fuse_gemm_epilogue(FusionContext& ctx);  // MatMul/Gemm/Conv + bias, activation, residual
void fuse_elementwise(FusionContext& ctx);    // any DAG of elementwise/broadcast ops -> one loop

}  // namespace fusor::passes
