// Opsets 1-6 broadcast an elementwise op's second input only when asked (`broadcast: 1`), and
// then at the position `axis` gives, not at the trailing axes as numpy (and opset 7 on) does:
// Add(x [N, C, H, W], bias [C], broadcast=1, axis=1) adds bias per channel. Caffe2's exports in
// the old model zoo write biases this way. fusor's kernels broadcast as numpy does, so the
// importer reshapes such a second input to end at the trailing axes ([C] -> [C, 1, 1]).
#pragma once
#include <string>

#include "ir/graph.h"

namespace fusor {

// For a node of the default domain at opset < 7 with `broadcast: 1` and an `axis` that is not
// the trailing position: replaces input 1, a constant, with a copy shaped [B..., 1, ...]. A
// computed input 1, or a first input of unknown rank, throws UnsupportedOp naming `where`.
void align_legacy_broadcast(Graph& graph, Node& n, const std::string& where);

}  // namespace fusor
