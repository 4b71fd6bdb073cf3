// The fusion switches as data: one row per switch of the config's `fusion:` section. Everything
// that lists the switches loops over this one list: the FusionConfig members (fusor/config.h),
// the config parser and writer, the precision verdict's key, the server's session description,
// tune's fusion options and the pass pipeline (each pass runs under the switches that name it).
// Adding a switch is adding a row; docs/config.md describes each one (a unit test checks that
// the docs and this list agree).
//
// X(member, label, passes, description):
//   member       the FusionConfig member, and the YAML key inside `fusion:`;
//   label        its short name in verdict keys and logs ("elemwise=1");
//   passes       the pipeline passes it switches, space-separated (src/passes/pipeline.cc).
//                Every pass is named by at least one row and runs only when all rows naming it
//                are on, so a new row can refine a broader one without changing what the
//                broader one does in existing config files;
//   description  one line: what fusing it does.
// Every switch is on by default. New rows go last: verdict keys, session descriptions and
// written configs list the switches in this order, so the existing ones keep their text.
#pragma once

// clang-format off
#define FUSOR_FUSION_SWITCHES(X)                                                                  \
  X(fuse_elemwise,      "elemwise",      "fuse_elementwise",                                      \
    "chains of elementwise ops -> one kernel")                                                    \
  X(fuse_norm_act,      "norm_act",      "fuse_layer_norm fuse_group_norm fuse_gelu",             \
    "normalization followed by its activation")                                                   \
  X(fuse_gemm_epilogue, "gemm_epilogue", "merge_projections fuse_gemm_epilogue",                  \
    "bias / activation / residual into the GEMM; projections sharing an input -> one GEMM")       \
  X(fuse_attention,     "attention",     "fuse_attention",                                        \
    "the attention block -> one kernel")                                                          \
  X(merge_projections,  "merge_projections", "merge_projections",                                 \
    "projections sharing an input (Q, K, V) -> one GEMM; needs fuse_gemm_epilogue as well")       \
  X(fuse_quantized,     "quantized",     "fuse_quantized",                                        \
    "QDQ Conv/MaxPool units and dynamic MatMulInteger epilogues -> int8 kernels")               \
  X(fuse_rotary,        "rotary",        "fuse_rotary",                                           \
    "rotary position embedding (x cos + rotate_half(x) sin) -> one kernel")
// clang-format on
