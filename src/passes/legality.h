// Can a set of nodes become one kernel? Legality is kept apart from profit, and both answer with
// a reason when the answer is no (XLA's FusionDecision, Inductor's WhyNoFuse).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/bind.h"

namespace fusor {

struct LegalityRules {
  // Values made inside the set may also be used outside it (they become extra outputs).
  bool allow_extra_outputs = false;
};

// Why `nodes` cannot be fused, or nullopt when they can: a value made inside the set is used
// outside it or is a graph output (unless allowed), a node is already fused or has no kernel
// semantics to fuse, or fusing would create a cycle (a path leaves the set and comes back).
std::optional<std::string> why_not_legal(const Graph& g, const std::vector<int>& nodes,
                                         const LegalityRules& rules = {});

// Bytes of intermediate traffic the fusion saves: every value made and consumed only inside the
// set is neither written out nor read back (counted once each way).
size_t intermediate_bytes_saved(const Graph& g, const Binding& b, const std::vector<int>& nodes);

}  // namespace fusor
