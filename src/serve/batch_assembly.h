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

#include "serve/signature.h"

namespace fusor::serve {

struct Part {
  const Tensors* inputs;
  RequestShape shape;
};

Tensors assemble(const Signature& sig, const std::vector<Part>& parts, int64_t padded_rows, int64_t padded_seq,
                 const std::map<std::string, double>& pad_values);

std::vector<Tensors> split(const Signature& sig, const Tensors& outputs, const std::vector<Part>& parts);

}  // namespace fusor::serve
