// A decoder's last layers on the rows whose logits are read, not on every token. A step reads the
// logits of each sequence's last token only, yet an export computes every token's: the LM head
// ([hidden, vocab], the largest GEMM of a small model) and, above it, everything from the last
// attention on (its output projection, the residual adds, the last MLP, the final norm) works
// row by row, so only the KV cache needs the other rows, and the cache is written below.
// gather_logit_rows moves that row-wise tail onto a Gather of the read rows (graph input
// `rows_input`, int64 [rows]); the logits become [batch, rows, vocab]. On a 128-token prompt it
// saves the last layer's MLP and output projection on 127 rows (llama.cpp skips them the same way).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace fusor {

inline constexpr const char* kLogitRows = "fusor.logit_rows";

// The graph's value types bound with `tokens` tokens: how the pass tells the token axis (axis 1,
// [batch, tokens, ...]) from a broadcast one. `types` is per value id of the graph as given.
struct TokenProbe {
  int64_t tokens = 0;
  std::vector<TensorType> types;
};

// Returns false, leaving `g` as it was, unless the output `logits` is made by a MatMul of
// [batch, tokens, hidden] by a constant [hidden, vocab] (then any Casts). From there it takes in
// every node that works row by row along the token axis at every probe (at least two, with
// different token counts) and whose outputs only the taken nodes read: elementwise ops whose
// other inputs broadcast over the tokens, MatMuls by a constant matrix, reductions and
// normalizations over later axes. The token-axis values they read from outside are gathered.
bool gather_logit_rows(Graph& g, const std::string& logits, std::span<const TokenProbe> probes,
                       const std::string& rows_input = kLogitRows);

}  // namespace fusor
