// Whether a batched model's rows are independent, found by running it: two sample rows as one
// batch against each row alone. Stacking requests along axis 0 is only right for a model whose
// every output row depends on its own input row: one that centres over axis 0, a sequence-first
// export (softmax over axis 0), or an output whose axis 0 is not the batch (detections) would
// hand a request values of its batch-mates, or of its padding. Such a model runs each request
// alone, unpadded (Signature::runs_alone).
#pragma once
#include <string>

#include "fusor/engine.h"
#include "serve/signature.h"

namespace fusor::serve {

// Why batch-mates change a row's outputs ("" when the probe's rows agree, or when the model
// cannot run the probe's sample shapes: then nothing is known against batching).
std::string rows_coupled_in_a_probe(const Engine& engine, const SessionOptions& options);

// Why padding a request's sequence (as the batcher pads, its mask 0 over the padding) changes its
// outputs, or "": one request of a few tokens alone against the same request padded. A mask
// input is taken to hide padding, but a model may not use it everywhere (a cumulative sum over
// the sequence, a softmax before the mask is applied): such a model batches equal lengths only.
std::string padding_changes_outputs(const Engine& engine, const Signature& sig, const SessionOptions& options,
                                    const std::map<std::string, double>& pad_values);

}  // namespace fusor::serve
