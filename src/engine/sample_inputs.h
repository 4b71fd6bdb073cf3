// Deterministic, valid inputs for a model when the user gives none: token ids inside the
// embedding table they index, masks of ones, token type ids of zeros, position ids counting up
// from the past's length (the mask's columns beyond the tokens), normal floats.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace fusor {

std::map<std::string, Tensor> sample_inputs(const Graph& graph, const std::map<std::string, Dims>& dims,
                                            uint64_t seed = 0);

// The smallest row count of any constant table an integer input indexes through Gather,
// or -1 when it indexes none.
int64_t index_bound(const Graph& graph, int value);

}  // namespace fusor
