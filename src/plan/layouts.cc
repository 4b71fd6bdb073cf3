#include "plan/layouts.h"

#include <algorithm>
#include <utility>

namespace fusor {
namespace {

struct LayoutChoice {
  const Plan& plan;
  std::vector<bool> plain_only;                                   // per value: graph outputs, viewed values
  std::vector<std::string> layout;                                // per value: "" = row-major
  std::vector<bool> follows;                                      // per step: outputs take its inputs' layout
  std::vector<std::vector<std::pair<size_t, size_t>>> readers;    // per value: (step, input position)

  const std::vector<int>& outputs(size_t s) const { return plan.steps[s].outputs; }
  int output(size_t s) const { return outputs(s).empty() ? -1 : outputs(s)[0]; }
  // Whether input i of step s has the shape of the step's first output, or the kernel takes it
  // in the followed layout anyway (follows the layout).
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
  // Whether step s may write its outputs in a non-row-major layout: every output is present, none
  // must be row-major, and some kernel reads one (a follower writes all its outputs alike).
  bool outputs_may_follow(size_t s) const {
    const auto& outs = outputs(s);
    return !outs.empty() &&
           std::all_of(outs.begin(), outs.end(), [&](int v) { return v >= 0 && !plain_only[static_cast<size_t>(v)]; }) &&
           std::any_of(outs.begin(), outs.end(), [&](int v) { return !readers[static_cast<size_t>(v)].empty(); });
  }
  // Whether value v may stay in its layout: its producer still follows it (when it follows) and
  // every reader accepts it or follows it into its own outputs.
  bool keeps_layout(size_t producer, int v) const {
    const std::string& l = layout[static_cast<size_t>(v)];
    if (follows[producer] && followed_layout(producer) != l) return false;
    return std::all_of(readers[static_cast<size_t>(v)].begin(), readers[static_cast<size_t>(v)].end(), [&](const auto& r) {
      const auto [rs, ri] = r;
      if (plan.steps[rs].kernel->accepts_input_layout(ri, l)) return true;
      return follows[rs] && full_shape(rs, ri) && layout[static_cast<size_t>(output(rs))] == l;
    });
  }
  // Of the layouts step s can write output v in (the offered one first), the first that every
  // reader takes or may follow; the offered one when none is.
  std::string offered_layout(size_t s, int v) const {
    const Kernel& k = *plan.steps[s].kernel;
    std::vector<std::string> all{k.offered_output_layout()};
    for (std::string& l : k.other_output_layouts()) all.push_back(std::move(l));
    for (const std::string& l : all) {
      const bool taken = std::all_of(readers[static_cast<size_t>(v)].begin(), readers[static_cast<size_t>(v)].end(),
                                     [&](const auto& r) {
                                       const Kernel& reader = *plan.steps[r.first].kernel;
                                       return reader.accepts_input_layout(r.second, l) || reader.follows_layout(l);
                                     });
      if (taken) return l;
    }
    return all[0];
  }
  // Back to row-major: a follower's outputs all at once, an offering kernel's output 0.
  void make_plain(size_t s) {
    for (int v : outputs(s))
      if (v >= 0) layout[static_cast<size_t>(v)].clear();
    follows[s] = false;
  }
};

}  // namespace

void assign_blocked_layouts(Plan& plan) {
  const Graph& g = *plan.graph;
  const size_t nv = g.values.size(), ns = plan.steps.size();
  LayoutChoice c{plan, std::vector<bool>(nv, false), std::vector<std::string>(nv), std::vector<bool>(ns, false), {}};
  for (int v : g.outputs)
    if (v >= 0) c.plain_only[static_cast<size_t>(v)] = true;
  for (size_t v = 0; v < plan.alias_of.size(); ++v)
    if (plan.alias_of[v] >= 0) c.plain_only[v] = c.plain_only[static_cast<size_t>(plan.alias_of[v])] = true;
  c.readers.resize(nv);
  for (size_t s = 0; s < ns; ++s)
    for (size_t i = 0; i < plan.steps[s].inputs.size(); ++i)
      if (int v = plan.steps[s].inputs[i]; v >= 0) c.readers[static_cast<size_t>(v)].emplace_back(s, i);

  // Forward, in step order: a kernel offers its output layout, or follows its inputs' layout
  // into all its outputs (Split's parts too).
  for (size_t s = 0; s < ns; ++s) {
    const Kernel& k = *plan.steps[s].kernel;
    if (!k.offered_output_layout().empty()) {
      const int v = c.output(s);
      if (v >= 0 && !c.plain_only[static_cast<size_t>(v)] && !c.readers[static_cast<size_t>(v)].empty())
        c.layout[static_cast<size_t>(v)] = c.offered_layout(s, v);
    } else if (std::string in = c.followed_layout(s); !in.empty() && c.outputs_may_follow(s) && k.follows_layout(in)) {
      for (int v : c.outputs(s)) c.layout[static_cast<size_t>(v)] = in;
      c.follows[s] = true;
    }
  }
  // Then back to row-major wherever a reader cannot take the layout, until nothing changes:
  // one value going back can undo a follower's outputs, and that its inputs.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < ns; ++s) {
      const bool stays = std::all_of(c.outputs(s).begin(), c.outputs(s).end(), [&](int v) {
        return v < 0 || c.layout[static_cast<size_t>(v)].empty() || c.keeps_layout(s, v);
      });
      if (stays) continue;
      c.make_plain(s);
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
    bool out_blocked = false;
    for (int v : step.outputs)
      if (v >= 0 && !c.layout[static_cast<size_t>(v)].empty()) {
        blocked_by[static_cast<size_t>(v)] = step.kernel.get();
        out_blocked = true;
      }
    if (out_blocked && !c.follows[s]) step.kernel->use_output_layout(c.layout[static_cast<size_t>(c.output(s))]);
    const bool touched = out_blocked || std::any_of(in_layouts.begin(), in_layouts.end(),
                                                    [](const std::string& l) { return !l.empty(); });
    if (touched) step.kernel->use_layouts(in_layouts, out_blocked);
    any = any || out_blocked;
  }
  if (any) plan.blocked_by = std::move(blocked_by);
}

}  // namespace fusor
