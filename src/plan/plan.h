// A Plan is a graph bound to concrete input shapes: every value has a concrete type, every
// value computable at plan time (weights, shape subgraphs) is folded to a constant, and the
// remaining nodes are steps with kernels chosen and prepared (weights packed). A fast plan gets
// its kernels from a Backend and never names a device.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "ir/graph.h"
#include "kernels/backend.h"
#include "passes/fusion_report.h"

namespace fusor {

enum class KernelChoice {
  Reference,  // plain reference kernels only (kernels/ref): the ground truth
  Fast,       // the backend's optimized kernels where they apply, its reference kernels elsewhere
};

struct PlanOptions {
  KernelChoice kernels = KernelChoice::Fast;
  // Where a fast plan's kernels come from (required for fast plans, unused by reference ones).
  const Backend* backend = nullptr;
  // Ops whose output has the input's bytes become views instead of copies (fast plans only).
  bool views = true;
  // Order steps to lower the bytes live at once (see plan/schedule.h).
  bool memory_aware_order = true;
  // Inputs whose values are fixed for the plan's lifetime, like TensorRT's shape tensors: they
  // fold as constants, so values that determine shapes (Slice starts, Reshape targets) may come
  // from graph inputs. Each must match its bound dtype and dims.
  std::map<std::string, Tensor> frozen_inputs;
  // Run the fusion passes with these switches (fast plans only); no fusion when empty.
  std::optional<FusionConfig> fusion;
  // Replaces the kernel chosen for a fused step (the precision gate's fault injection).
  KernelWrapper wrap_fused_kernel;
  // Let kernels pass values in their blocked layouts (plan/layouts.h; fast plans only).
  bool blocked_layouts = true;
  // A packed plan (passes/pack_tokens.h): the graph went through prepare_packed_graph and every
  // input is bound [1, T]. Needs `fusion` with the attention fusion on, in reference plans too.
  bool packed_tokens = false;
  // The plan runs T tokens along its [1, T] inputs, the real ones first and then filler (packed
  // plans, DecoderBatch's steps): the steps whose output 0 has a row per token are listed in
  // Plan::token_row_kernels, for set_live_tokens. 0: not such a plan.
  int64_t token_rows = 0;
  // Inputs the caller owns and kernels use in place for the plan's lifetime (the decode
  // runtime's KV-cache pool, which CachedAttention appends to): never copied into the arena nor
  // fed per run, so every run reads and writes these very tensors. Each must match its bound
  // dtype and dims.
  std::map<std::string, Tensor> shared_inputs;
};

struct Step {
  int node = -1;                  // index into graph->nodes
  std::unique_ptr<Kernel> kernel;
  std::vector<int> inputs;        // value ids, -1 for omitted optional inputs
  std::vector<int> outputs;       // value ids, -1 for omitted optional outputs
};

struct Plan {
  std::shared_ptr<const Graph> graph;
  const Backend* backend = nullptr;  // the one that chose the kernels; nullptr in a reference plan
  std::vector<TensorType> types;  // per value id
  std::vector<Tensor> constants;  // per value id; defined for constants and folded values
  std::vector<Step> steps;
  // Per value id: the value whose bytes it reuses as a view (Reshape, Squeeze, Unsqueeze,
  // Flatten, Identity and inference Dropout in the fast plan), or -1. Views have no step.
  std::vector<int> alias_of;
  // What fusion did: the items in this plan and the opportunities declined, with reasons.
  FusionReport fusion;
  // Per value id: the kernel that stores it in its blocked or followed layout, or nullptr for
  // row-major; empty when no value is blocked. Only kernels read such values directly.
  std::vector<const Kernel*> blocked_by;
  // The graph as imported, before fusion (graph is the fused one when fusion ran).
  std::shared_ptr<const Graph> source_graph;

  // Some step's kernel uses_openmp(): the executor runs every step's parallel work on OpenMP.
  bool openmp_team = false;

  // Kernels may keep state between runs, so one executor at a time owns a plan's kernels.
  mutable bool claimed_by_executor = false;

  // Per value id: the caller's tensor for a shared input (PlanOptions::shared_inputs); empty
  // when there is none.
  std::vector<Tensor> shared;

  // The steps whose output 0 holds one row per token (its dims but the last multiply to
  // PlanOptions::token_rows): the kernels that set_live_tokens tells how many tokens are real.
  std::vector<Kernel*> token_row_kernels;

  bool is_constant(int value) const { return constants[static_cast<size_t>(value)].defined(); }
  bool is_shared(int value) const { return !shared.empty() && shared[static_cast<size_t>(value)].defined(); }
};

// Checks `input_dims` (one entry per graph input) and `frozen_inputs` against the model and
// writes them in g.inputs' order into `types` and `frozen` (both g.inputs.size() long); throws a
// fusor::Error naming the input otherwise. build_plan's first step.
void bind_inputs(const Graph& g, const std::map<std::string, Dims>& input_dims,
                 const std::map<std::string, Tensor>& frozen_inputs, std::vector<TensorType>& types,
                 std::vector<Tensor>& frozen);

// Binds `input_dims` (one entry per graph input), folds constants and selects kernels.
// Throws fusor::Error for missing inputs, shapes that contradict the model, ops that fail, or a
// fast plan without a backend.
Plan build_plan(std::shared_ptr<const Graph> graph, const std::map<std::string, Dims>& input_dims,
                const PlanOptions& options);

// The plan's runs from now on hold `tokens` real tokens, then filler (PlanOptions::token_rows):
// its token-row kernels may skip the filler's rows (Kernel::set_live_rows). T: every row is real.
void set_live_tokens(const Plan& plan, int64_t tokens);

}  // namespace fusor
