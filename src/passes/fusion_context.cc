#include "passes/fusion_context.h"

#include <algorithm>

#include "ir/graph_edit.h"
#include "passes/naming.h"

namespace fusor {

FusionContext::FusionContext(Graph graph, std::vector<TensorType> input_types, std::vector<Tensor> frozen,
                             const FusionConfig& config, EvaluateFn evaluate)
    : graph_(std::move(graph)),
      input_types_(std::move(input_types)),
      frozen_(std::move(frozen)),
      config_(config),
      evaluate_(evaluate) {
  for (const Node& n : graph_.nodes)
    if (n.op == Op::Fused) taken_names_.insert(n.name);
  refresh();
}

const Tensor* FusionContext::constant(int value) const {
  return value >= 0 && binding_.is_constant(value) ? &binding_.constants[static_cast<size_t>(value)] : nullptr;
}

void FusionContext::refresh() {
  binding_ = bind_graph(graph_, input_types_, frozen_, evaluate_);
  consumers_ = graph_.consumers();
}

void FusionContext::decline(const std::string& pass, const std::vector<int>& nodes, const std::string& reason) {
  NotFused nf{pass, {}, reason};
  for (int n : nodes) nf.nodes.push_back(node(n).name);
  for (const NotFused& seen : report_.not_fused)  // passes that rescan meet the same ones again
    if (seen.pass == nf.pass && seen.nodes == nf.nodes && seen.reason == nf.reason) return;
  report_.not_fused.push_back(std::move(nf));
}

bool FusionContext::fuse(const std::string& pass, const std::vector<int>& nodes, FusedKind fused_kind,
                         const std::string& suffix, std::map<std::string, Attribute> attrs,
                         const LegalityRules& rules, const std::vector<int>& leading_inputs,
                         const std::vector<int>& scope_nodes) {
  const std::string kind = fused_kind_name(fused_kind);
  if (auto why = why_not_legal(graph_, nodes, rules)) {
    decline(pass, nodes, *why);
    return false;
  }
  // The same group proposed again (passes rescan) gets the same name, so a disabled item stays
  // disabled instead of coming back as "<name>.2".
  std::vector<std::string> key = {kind};
  for (int n : nodes) key.push_back(node(n).name);
  std::sort(key.begin() + 1, key.end());
  auto known = names_by_group_.find(key);
  std::string name;
  if (known != names_by_group_.end()) {
    name = known->second;
  } else {
    std::string scope = common_scope(graph_, scope_nodes.empty() ? nodes : scope_nodes);
    name = unique_item_name(scope, suffix, taken_names_);
    names_by_group_[key] = name;
  }
  if (std::find(config_.disabled.begin(), config_.disabled.end(), name) != config_.disabled.end()) {
    // apply_precision_verdict adds the saved verdict's rollbacks to the same list.
    decline(pass, nodes,
            "item '" + name + "' is disabled: rolled back by the saved precision verdict (fusor check) or " +
                "listed in the config's fusion.disabled");
    return false;
  }
  FusionItem item{name, kind, pass, {}, intermediate_bytes_saved(graph_, binding_, nodes)};
  for (int n : nodes) item.nodes.push_back(node(n).name);
  std::vector<DType> dtypes;
  for (const TensorType& t : binding_.types) dtypes.push_back(t.dtype);
  fuse_nodes(graph_, nodes, kind, name, std::move(attrs), leading_inputs, dtypes);
  report_.items.push_back(std::move(item));
  refresh();
  return true;
}

}  // namespace fusor
