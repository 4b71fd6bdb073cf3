// An If whose condition is known when a plan is built (a constant, or computed from frozen
// inputs: merged decoder exports branch on `use_cache_branch`) is replaced by the nodes of the
// branch it takes, so that fusion and fast kernels apply to them. An If whose condition is only
// known at run time stays, and runs its branch node by node in reference kernels.
#pragma once
#include <memory>
#include <span>

#include "ir/graph.h"

namespace fusor {

// `inputs` and `frozen` as for bind_graph. Returns `graph` itself when no If qualifies.
std::shared_ptr<const Graph> inline_known_branches(std::shared_ptr<const Graph> graph,
                                                   std::span<const TensorType> inputs,
                                                   std::span<const Tensor> frozen);

}  // namespace fusor
