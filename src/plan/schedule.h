// Memory-aware step order. Any topological order of a plan's steps computes the same values;
// the order decides how many bytes are live at once. Greedy list scheduling: among the steps
// whose inputs are ready, run the one that frees the most bytes net of what it allocates, and
// on ties keep the original order, so a consumer still tends to run right after its producer.
// The new order is kept only when it lowers the liveness lower bound.
#pragma once

namespace fusor {

struct Plan;

// Reorders plan.steps in place. Never changes what is computed.
void schedule_for_memory(Plan& plan);

}  // namespace fusor
