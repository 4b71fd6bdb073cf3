// Triton's classification extension: an output requested with a class count K (HTTP
// "parameters": {"classification": K}, gRPC's "classification" parameter, tritonclient's
// InferRequestedOutput(name, class_count=K)) comes back as BYTES strings "value:index" of the K
// largest values of each batch row, largest first: shape [rows, K], or [K] for an unbatched model.
#pragma once
#include <string>
#include <vector>

#include "fusor/tensor.h"
#include "serve/signature.h"

namespace fusor::serve {

struct Classes {
  Dims dims;
  std::vector<std::string> items;  // row by row
};

// Throws RequestError (400) for an output that is not numeric or a K below 1.
Classes classify(const Tensor& scores, int64_t k, bool batched, const std::string& output);

// Before the model runs, as Triton checks a request: an output it does not have (400), or one
// asked for as `classes` (> 0) that classify() would refuse. 0 classes: the tensor itself.
void check_requested_output(const Signature& sig, const std::string& output, int64_t classes);

}  // namespace fusor::serve
