// The fusion pipeline: one ordered list of named passes (pipeline.cc), each run only when the
// fusion switches whose rows name it are on (fusor/fusion_switches.h). It rewrites a copy of the
// graph for one plan's concrete input types; fused nodes keep the subgraph they replace as their
// body, so any item can be inlined again.
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "fusor/config.h"
#include "ir/graph.h"
#include "passes/fusion_report.h"

namespace fusor {

struct FusionResult {
  std::shared_ptr<const Graph> graph;
  FusionReport report;
};

// `input_types[i]` and `frozen[i]` belong to graph.inputs[i]; constants fold with `evaluate`
// (see bind_graph).
FusionResult run_fusion_passes(const Graph& graph, std::span<const TensorType> input_types,
                               std::span<const Tensor> frozen, const FusionConfig& config, EvaluateFn evaluate);

// The pass names, in order (for docs and tests).
std::vector<std::string> fusion_pass_names();

}  // namespace fusor
