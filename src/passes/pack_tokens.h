// Padding-free ("packed") execution of transformer encoders (issue #15). Requests of different
// lengths run as one sequence of T tokens laid end to end, bound as batch 1, sequence T: every
// op except attention works token by token, so it runs over real tokens only, and attention
// keeps each sequence to its own keys through a per-token input of sequence starts.
//
// Two steps around fusion, because the first changes what binding sees and the second needs the
// fused attention nodes:
//   prepare_packed_graph  (imported graph) adds the per-token inputs `fusor.sequence_starts` and,
//                         unless the model takes `position_ids`, `fusor.positions`, and points
//                         the position table's Slice (HF BERT's arange buffer cut to the
//                         sequence length) at the per-sequence positions;
//   pack_attention        (fused graph) gives every Attention node the sequence starts, its body
//                         a block-diagonal Where (the reference twin of the packed kernel), and
//                         proves that every other step is token-local: bound at T and at T + 1,
//                         each computed value has one token axis with only 1s before it, and each
//                         op is one whose output token t reads input token t only.
// Both refuse with a reason (an UnsupportedOp fusor::Error) when an assumption fails; the model is
// then served padded, and the reason shows in the profile's not_fused.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_table.h"

namespace fusor {

inline constexpr const char* kPackedSequenceStarts = "fusor.sequence_starts";
inline constexpr const char* kPackedPositions = "fusor.positions";
inline constexpr const char* kModelPositionIds = "position_ids";
inline constexpr const char* kPackPass = "pack_tokens";

// What the packed runner feeds: every graph input is a [1, T] token tensor. `positions` is the
// input that takes per-sequence positions 0, 1, ... (ours, or the model's position_ids).
struct PackedSignature {
  std::vector<std::string> token_inputs;  // the model's own inputs, packed as given
  std::string positions;                  // "" when the model reads no positions
  std::string sequence_starts;
};

// Rewrites `g` (an imported graph) for packing; throws an UnsupportedOp Error with the reason.
PackedSignature prepare_packed_graph(Graph& g);

// `g` is the fused graph of a prepared model; `in_types` and `frozen` its bound inputs (every
// one [1, T]). Returns the graph with packed attention, or throws an UnsupportedOp Error.
Graph pack_attention(const Graph& g, std::span<const TensorType> in_types, std::span<const Tensor> frozen,
                     EvaluateFn evaluate);

}  // namespace fusor
