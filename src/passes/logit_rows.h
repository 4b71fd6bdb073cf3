// A decoder's LM head on the rows whose logits are read, not on every token: a step reads the
// logits of each sequence's last token only, and the LM head ([hidden, vocab], the largest GEMM
// of a small model) would otherwise run on every prompt token of a prefill. A Gather of those rows
// (graph input `rows_input`, int64 [rows]) goes before the MatMul that makes the logits, which
// become [batch, rows, vocab].
#pragma once
#include <string>

#include "ir/graph.h"

namespace fusor {

inline constexpr const char* kLogitRows = "fusor.logit_rows";

// Returns false, leaving `g` as it was, unless the output `logits` is made by a MatMul of
// [batch, tokens, hidden] by a constant [hidden, vocab] (then any Casts): only then is every logits row a function
// of its own token's row alone, so that gathering before the MatMul equals gathering after it.
bool gather_logit_rows(Graph& g, const std::string& logits, const std::string& rows_input = kLogitRows);

}  // namespace fusor
