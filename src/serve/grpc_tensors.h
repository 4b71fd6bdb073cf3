// A gRPC ModelInferRequest's input tensors off the wire: raw_input_contents (one per input, when
// the request has any) or each input's typed contents. Shared by ModelInfer and ModelStreamInfer,
// for encoders (tensors) and decoders (serve/grpc_generate.h). Every check throws RequestError.
#pragma once
#include <string>
#include <vector>

#include "fusor/tensor.h"
#include "kserve.pb.h"
#include "serve/tensor_codec.h"

namespace fusor::serve {

struct GrpcInput {
  WireTensor wire;
  const std::string* raw = nullptr;  // its raw_input_contents entry, or null: `contents` holds it
  const inference::InferTensorContents* contents = nullptr;
};

// The request's inputs in order; 400 for a repeated name, a raw_input_contents count that is
// not the input count, or an input with typed contents beside raw_input_contents; 501 for one
// in shared memory.
std::vector<GrpcInput> grpc_inputs(const inference::ModelInferRequest& q);
Tensor grpc_tensor(const GrpcInput& in);
// A BYTES input's elements.
std::vector<std::string> grpc_bytes(const GrpcInput& in);

}  // namespace fusor::serve
