// The state every fusion pass works on: a mutable copy of the graph, bound to the plan's concrete
// input types (folding constants with `evaluate`, see bind_graph), the config that switches
// items, and the report the passes write to.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "ir/bind.h"
#include "passes/fused_kinds.h"
#include "passes/fusion_report.h"
#include "passes/legality.h"

namespace fusor {

class FusionContext {
 public:
  FusionContext(Graph graph, std::vector<TensorType> input_types, std::vector<Tensor> frozen,
                const FusionConfig& config, EvaluateFn evaluate);

  const Graph& graph() const { return graph_; }
  Graph& mutable_graph() { return graph_; }
  const FusionConfig& config() const { return config_; }
  FusionReport& report() { return report_; }

  // Current types and plan-time constants (refreshed after every rewrite).
  const TensorType& type(int value) const { return binding_.types[static_cast<size_t>(value)]; }
  const Tensor* constant(int value) const;
  const std::vector<int>& consumers(int value) const { return consumers_[static_cast<size_t>(value)]; }
  const Node& node(int n) const { return graph_.nodes[static_cast<size_t>(n)]; }
  const Binding& binding() const { return binding_; }

  // Fuses `nodes` into one node of `kind` named "<scope>.<suffix>" after checking legality,
  // profit and the config's disabled list; records the item, or the reason it was declined
  // under `pass`. `leading_inputs` go first among the node's inputs (see fuse_nodes). The scope
  // comes from `scope_nodes` when given (e.g. a GEMM and its bias, not the activation after
  // them), else from all `nodes`. Returns whether it fused; node indices are invalid afterwards.
  bool fuse(const std::string& pass, const std::vector<int>& nodes, FusedKind kind,
            const std::string& suffix, std::map<std::string, Attribute> attrs = {},
            const LegalityRules& rules = {}, const std::vector<int>& leading_inputs = {},
            const std::vector<int>& scope_nodes = {});
  // Records a declined opportunity.
  void decline(const std::string& pass, const std::vector<int>& nodes, const std::string& reason);

  // Re-binds types after the graph changed outside fuse().
  void refresh();

 private:
  Graph graph_;
  std::vector<TensorType> input_types_;
  std::vector<Tensor> frozen_;
  FusionConfig config_;
  EvaluateFn evaluate_;
  FusionReport report_;
  Binding binding_;
  std::vector<std::vector<int>> consumers_;
  std::set<std::string> taken_names_;
  std::map<std::vector<std::string>, std::string> names_by_group_;  // kind + sorted node names
};

}  // namespace fusor
