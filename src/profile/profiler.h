// Aggregation behind profile_model: per-step costs and per-run step times become per-kernel and
// per-op rows. Split out so the arithmetic can be tested without timing anything.
#pragma once
#include <string>
#include <vector>

#include "fusor/profile.h"
#include "profile/cost.h"

namespace fusor {

// What the profiler knows of one step.
struct StepInfo {
  std::string kernel, op, node, shapes;
  StepCost cost;
};

double median(std::vector<double> v);

enum class GroupBy { Kernel, KernelAndShapes, Op };

// Groups steps into rows. `times_s[run][step]` are seconds. Rows come sorted by time,
// descending; share is of `total_ms`.
std::vector<ProfileRow> aggregate(const std::vector<StepInfo>& steps, const std::vector<std::vector<double>>& times_s,
                                  GroupBy group, double total_ms, const Ceilings& ceilings);

}  // namespace fusor
