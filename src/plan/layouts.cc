#include "plan/layouts.h"

#include <algorithm>
#include <utility>

namespace fusor {

void assign_blocked_layouts(Plan& plan) {
  const Graph& g = *plan.graph;
  const size_t nv = g.values.size();
  std::vector<bool> plain_only(nv, false);  // graph outputs and values seen through views
  for (int v : g.outputs)
    if (v >= 0) plain_only[static_cast<size_t>(v)] = true;
  for (size_t v = 0; v < plan.alias_of.size(); ++v)
    if (plan.alias_of[v] >= 0) plain_only[v] = plain_only[static_cast<size_t>(plan.alias_of[v])] = true;
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(nv);  // (step, input position)
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (size_t i = 0; i < plan.steps[s].inputs.size(); ++i)
      if (int v = plan.steps[s].inputs[i]; v >= 0) readers[static_cast<size_t>(v)].emplace_back(s, i);

  std::vector<std::vector<std::string>> in_layouts(plan.steps.size());
  std::vector<bool> out_blocked(plan.steps.size(), false);
  std::vector<const Kernel*> blocked_by(nv, nullptr);
  bool any = false;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    if (step.outputs.empty() || step.outputs[0] < 0) continue;
    const size_t v = static_cast<size_t>(step.outputs[0]);
    const std::string layout = step.kernel->offered_output_layout();
    if (layout.empty() || plain_only[v] || readers[v].empty()) continue;
    const bool all_accept = std::all_of(readers[v].begin(), readers[v].end(), [&](const auto& r) {
      return plan.steps[r.first].kernel->accepts_input_layout(r.second, layout);
    });
    if (!all_accept) continue;
    out_blocked[s] = true;
    blocked_by[v] = step.kernel.get();
    any = true;
    for (const auto& [rs, ri] : readers[v]) {
      in_layouts[rs].resize(plan.steps[rs].inputs.size());
      in_layouts[rs][ri] = layout;
    }
  }
  if (!any) return;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    in_layouts[s].resize(plan.steps[s].inputs.size());
    const bool touched = out_blocked[s] || std::any_of(in_layouts[s].begin(), in_layouts[s].end(),
                                                        [](const std::string& l) { return !l.empty(); });
    if (touched) plan.steps[s].kernel->use_layouts(in_layouts[s], out_blocked[s]);
  }
  plan.blocked_by = std::move(blocked_by);
}

}  // namespace fusor
