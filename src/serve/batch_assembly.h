// Turning queued requests into one batch and the batch's outputs back into per-request responses.
//
// assemble() stacks requests along axis 0 in order and pads: the sequence axis up to
// `padded_seq` with the input's pad value (e.g. attention_mask 0, pad token id), and the batch
// axis up to `padded_rows` with copies of the first request's first row, so padding rows are
// real, valid inputs (an all-masked row could make softmax divide by zero). split() returns each
// request's rows, with sequence axes cut back to the request's own length.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "serve/signature.h"

namespace fusor::serve {

struct Part {
  const Tensors* inputs;
  RequestShape shape;
};

// The batch-size bucket a batch of `rows` rows pads up to: the smallest preferred batch size that
// fits, else the next power of two up to max_batch (an unbatched model: rows). A bounded set of
// sizes keeps each context's plans few; the tuner's simulator pads the same way.
int64_t padded_rows(const TrafficClass& cls, bool batched, int64_t rows);
// A sequence length rounded up to a multiple of `seq_bucket` (-1, no sequence axis, stays -1).
int64_t padded_seq(int64_t seq, int64_t seq_bucket);
// The token capacity of the packed plan a batch of `tokens` real tokens runs in: a multiple of a
// step that starts at `token_bucket` and doubles while under tokens / 16, so filler stays under
// 1/8 and the plans are few (serve/packed_cache.h).
int64_t packed_capacity(int64_t tokens, int64_t token_bucket);
// Every capacity packed_capacity gives, from the smallest to the one that holds `tokens`: the
// plans a server (or a tuner's load) whose batches reach `tokens` can need.
std::vector<int64_t> packed_capacities_up_to(int64_t tokens, int64_t token_bucket);

Tensors assemble(const Signature& sig, const std::vector<Part>& parts, int64_t padded_rows, int64_t padded_seq,
                 const std::map<std::string, double>& pad_values);

std::vector<Tensors> split(const Signature& sig, const Tensors& outputs, const std::vector<Part>& parts);

}  // namespace fusor::serve
