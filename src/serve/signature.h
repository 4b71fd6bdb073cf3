// What a served model accepts and returns, taken from the engine's inputs and outputs, and the
// checks one request's tensors must pass before they may join a batch.
//
// Batching rules: when every input's dimension 0 is symbolic the model is batched, and requests
// stack along that axis. Axis 1 of an input is the sequence axis when it is symbolic. Requests of
// different lengths are padded to a common length only when the model has a mask input along that
// axis (attention_mask), whose zeros hide the padding; each output axis with the same symbol is
// cut back per request. Without one, padding would change the outputs (an audio model's samples,
// token ids with no mask), so only requests of equal length share a batch. Any other symbolic
// dimension must match exactly for requests to share a batch (it is part of the group key). A
// model that couples the rows of a batch (runs_alone) shares batches with nothing.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "fusor/engine.h"

namespace fusor::serve {

using Tensors = std::map<std::string, Tensor>;

// A checked request's place in the batcher.
struct RequestShape {
  int64_t rows = 1;    // size of the batch axis (1 for an unbatched model)
  int64_t seq = -1;    // its sequence length, -1 when the model has no sequence axis
  std::string group;   // requests with equal groups (after sequence bucketing) can share a batch
};

struct Signature {
  std::vector<TensorInfo> inputs, outputs;
  bool batched = false;
  std::vector<bool> input_has_seq;  // per input: axis 1 is the sequence axis
  std::vector<int> output_seq_axis;  // per output: the axis that follows the sequence, or -1
  bool pads_seq = false;             // a mask input spans the sequence axis: padding is hidden
  // Why each request runs alone, unpadded ("" when requests may share batches): the model
  // computes something over the whole batch (DynamicQuantizeLinear's one scale), so batch-mates
  // and padding would change a request's outputs.
  std::string runs_alone;

  static Signature of(std::vector<TensorInfo> inputs, std::vector<TensorInfo> outputs);
  bool has_seq() const;
  const TensorInfo* input(const std::string& name) const;
  // The length multiple requests are padded to: `configured` (serve.seq_bucket) when padding is
  // hidden by a mask, else 1 (no padding).
  int64_t seq_bucket(int64_t configured) const { return pads_seq && runs_alone.empty() ? configured : 1; }
  // Checks names, dtypes, ranks and fixed dims; throws RequestError (400) naming the problem.
  // `seq_bucket` rounds the sequence length up for the group key.
  RequestShape check(const Tensors& request, int64_t seq_bucket) const;
};

// Triton's datatype names: "FP32", "INT64", ...; "" for a dtype with no name.
const char* triton_dtype(DType t);
DType dtype_from_triton(const std::string& name);  // Undefined when unknown or unsupported
std::string shape_string(const Dims& dims);        // "[1,128]"

}  // namespace fusor::serve
