// Stable names for fusion items, such as `layer3.attention.self.attention` or
// `layer0.intermediate.dense.bias_gelu`. A name depends only on the model's node names and the
// item's kind, so it survives re-export, other batch sizes and other configs: reports, the
// config's fusion.disabled and the precision gate all refer to items by it.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// The scope the nodes share, from their '/'-separated names: the path from the first component
// that carries a layer number ("layer.3" -> "layer3"), lowercased and joined with dots; empty
// when the names share no path.
std::string common_scope(const Graph& g, const std::vector<int>& nodes);

// "<scope>.<suffix>" (just the suffix without a scope, and without repeating a scope that
// already ends in it), made unique against `taken` with ".2", ".3", ...; adds it to `taken`.
std::string unique_item_name(const std::string& scope, const std::string& suffix, std::set<std::string>& taken);

}  // namespace fusor
