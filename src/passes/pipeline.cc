#include "passes/pipeline.h"

#include "fusor/error.h"
#include "ir/graph_edit.h"
#include "passes/passes.h"

namespace fusor {
namespace {

struct Pass {
  const char* name;  // names it in its switch's row of FUSOR_FUSION_SWITCHES
  void (*run)(FusionContext&);
};

// Patterns first, while their shape is intact; the generic elementwise pass takes what is left.
constexpr Pass kPasses[] = {
    {"fuse_quantized", passes::fuse_quantized},
    {"fuse_layer_norm", passes::fuse_layer_norm},
    {"fuse_group_norm", passes::fuse_group_norm},
    {"fuse_gelu", passes::fuse_gelu},
    {"fuse_attention", passes::fuse_attention},
    {"fuse_rotary", passes::fuse_rotary},
    {"merge_projections", passes::merge_projections},
    {"fuse_gemm_epilogue", passes::fuse_gemm_epilogue},
    {"fuse_elementwise", passes::fuse_elementwise},
};

// Whether `pass` runs: every switch whose row names it is on (a unit test checks that each pass
// has a switch).
bool enabled(const Pass& pass, const FusionConfig& config) {
  bool named = false;
  for (const FusionSwitch& s : kFusionSwitches) {
    if (!switches_pass(s, pass.name)) continue;
    if (!(config.*s.member)) return false;
    named = true;
  }
  if (!named) throw Error(std::string("fusion pass '") + pass.name + "' has no switch in FUSOR_FUSION_SWITCHES");
  return true;
}

}  // namespace

FusionResult run_fusion_passes(const Graph& graph, std::span<const TensorType> input_types,
                               std::span<const Tensor> frozen, const FusionConfig& config, EvaluateFn evaluate) {
  FusionContext ctx(graph, {input_types.begin(), input_types.end()}, {frozen.begin(), frozen.end()}, config,
                    evaluate);
  for (const Pass& pass : kPasses)
    if (enabled(pass, config)) pass.run(ctx);
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
