#include "passes/pipeline.h"

#include "ir/graph_edit.h"
#include "passes/passes.h"

namespace fusor {
namespace {

struct Pass {
  const char* name;
  bool FusionConfig::*enabled;  // the config switch that turns the pass off
  void (*run)(FusionContext&);
};

// Patterns first, while their shape is intact; the generic elementwise pass takes what is left.
constexpr Pass kPasses[] = {
    {"fuse_layer_norm", &FusionConfig::fuse_norm_act, passes::fuse_layer_norm},
    {"fuse_gelu", &FusionConfig::fuse_norm_act, passes::fuse_gelu},
    {"fuse_attention", &FusionConfig::fuse_attention, passes::fuse_attention},
    {"merge_projections", &FusionConfig::fuse_gemm_epilogue, passes::merge_projections},
    {"fuse_gemm_epilogue", &FusionConfig::fuse_gemm_epilogue, passes::fuse_gemm_epilogue},
    {"fuse_elementwise", &FusionConfig::fuse_elemwise, passes::fuse_elementwise},
};

}  // namespace

FusionResult run_fusion_passes(const Graph& graph, std::span<const TensorType> input_types,
                               std::span<const Tensor> frozen, const FusionConfig& config, EvaluateFn evaluate) {
  FusionContext ctx(graph, {input_types.begin(), input_types.end()}, {frozen.begin(), frozen.end()}, config,
                    evaluate);
  for (const Pass& pass : kPasses)
    if (config.*pass.enabled) pass.run(ctx);
  Graph out = ctx.graph();
  remove_dead_nodes(out);
  return {std::make_shared<const Graph>(std::move(out)), std::move(ctx.report())};
}

std::vector<std::string> fusion_pass_names() {
  std::vector<std::string> names;
  for (const Pass& pass : kPasses) names.push_back(pass.name);
  return names;
}

}  // namespace fusor
