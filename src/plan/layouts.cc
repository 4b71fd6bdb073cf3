#include "plan/layouts.h"

#include <algorithm>
#include <utility>

namespace fusor {
namespace {

struct LayoutChoice {
  const Plan& plan;
  std::vector<std::string> layout;                                // per value: "" = row-major
  std::vector<bool> follows;                                      // per step: output takes its inputs' layout
  std::vector<std::vector<std::pair<size_t, size_t>>> readers;    // per value: (step, input position)

  int output(size_t s) const { return plan.steps[s].outputs.empty() ? -1 : plan.steps[s].outputs[0]; }
  // Whether input i of step s has the shape of the step's output, or the kernel takes it in the
  // followed layout anyway (follows the layout).
  bool full_shape(size_t s, size_t i) const {
    const int in = plan.steps[s].inputs[i], out = output(s);
    return in >= 0 && out >= 0 &&
           (plan.types[static_cast<size_t>(in)].dims == plan.types[static_cast<size_t>(out)].dims ||
            plan.steps[s].kernel->follows_input(i));
  }
  // The layout every full-shape input of step s arrives in, or "" when they differ or any is row-major.
  std::string followed_layout(size_t s) const {
    std::string common;
    for (size_t i = 0; i < plan.steps[s].inputs.size(); ++i) {
      if (!full_shape(s, i)) continue;
      const std::string& l = layout[static_cast<size_t>(plan.steps[s].inputs[i])];
      if (l.empty() || (!common.empty() && l != common)) return {};
      common = l;
    }
    return common;
  }
  // Whether value v may stay in its layout: its producer still follows it (when it follows) and
  // every reader accepts it or follows it into its own output.
  bool keeps_layout(size_t producer, int v) const {
    const std::string& l = layout[static_cast<size_t>(v)];
    if (follows[producer] && followed_layout(producer) != l) return false;
    return std::all_of(readers[static_cast<size_t>(v)].begin(), readers[static_cast<size_t>(v)].end(), [&](const auto& r) {
      const auto [rs, ri] = r;
      if (plan.steps[rs].kernel->accepts_input_layout(ri, l)) return true;
      const int out = output(rs);
      return follows[rs] && full_shape(rs, ri) && layout[static_cast<size_t>(out)] == l;
    });
  }
};

}  // namespace

void assign_blocked_layouts(Plan& plan) {
  const Graph& g = *plan.graph;
  const size_t nv = g.values.size(), ns = plan.steps.size();
  std::vector<bool> plain_only(nv, false);  // graph outputs and values seen through views
  for (int v : g.outputs)
    if (v >= 0) plain_only[static_cast<size_t>(v)] = true;
  for (size_t v = 0; v < plan.alias_of.size(); ++v)
    if (plan.alias_of[v] >= 0) plain_only[v] = plain_only[static_cast<size_t>(plan.alias_of[v])] = true;
  LayoutChoice c{plan, std::vector<std::string>(nv), std::vector<bool>(ns, false), {}};
  c.readers.resize(nv);
  for (size_t s = 0; s < ns; ++s)
    for (size_t i = 0; i < plan.steps[s].inputs.size(); ++i)
      if (int v = plan.steps[s].inputs[i]; v >= 0) c.readers[static_cast<size_t>(v)].emplace_back(s, i);

  // Forward, in step order: a kernel offers its output layout, or follows its inputs' layout.
  for (size_t s = 0; s < ns; ++s) {
    const int v = c.output(s);
    if (v < 0 || plain_only[static_cast<size_t>(v)] || c.readers[static_cast<size_t>(v)].empty()) continue;
    const Kernel& k = *plan.steps[s].kernel;
    if (std::string offered = k.offered_output_layout(); !offered.empty()) {
      c.layout[static_cast<size_t>(v)] = std::move(offered);
    } else if (std::string in = c.followed_layout(s); !in.empty() && plan.steps[s].outputs.size() == 1 &&
                                                        k.follows_layout(in)) {
      c.layout[static_cast<size_t>(v)] = std::move(in);
      c.follows[s] = true;
    }
  }
  // Then back to row-major wherever a reader cannot take the layout, until nothing changes:
  // one value going back can undo a follower's output, and that its inputs.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < ns; ++s) {
      const int v = c.output(s);
      if (v < 0 || c.layout[static_cast<size_t>(v)].empty() || c.keeps_layout(s, v)) continue;
      c.layout[static_cast<size_t>(v)].clear();
      c.follows[s] = false;
      changed = true;
    }
  }

  std::vector<const Kernel*> blocked_by(nv, nullptr);
  bool any = false;
  for (size_t s = 0; s < ns; ++s) {
    const Step& step = plan.steps[s];
    std::vector<std::string> in_layouts(step.inputs.size());
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i] >= 0) in_layouts[i] = c.layout[static_cast<size_t>(step.inputs[i])];
    const int v = c.output(s);
    const bool out_blocked = v >= 0 && !c.layout[static_cast<size_t>(v)].empty();
    if (out_blocked) blocked_by[static_cast<size_t>(v)] = step.kernel.get();
    const bool touched = out_blocked || std::any_of(in_layouts.begin(), in_layouts.end(),
                                                    [](const std::string& l) { return !l.empty(); });
    if (touched) step.kernel->use_layouts(in_layouts, out_blocked);
    any = any || out_blocked;
  }
  if (any) plan.blocked_by = std::move(blocked_by);
}

}  // namespace fusor
