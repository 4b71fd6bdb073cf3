// An encoder's ModelInfer over gRPC, shared by the unary call and the stream: the request read
// into tensors and a traffic class, and the response filled from the outputs (all of them, or
// those asked for, each as a tensor or as Triton's classification of it).
#pragma once
#include <string>

#include "kserve.pb.h"
#include "serve/served_model.h"

namespace fusor::serve {

struct EncoderRequest {
  Tensors inputs;
  std::string cls;  // "": the model's default class
};
// RequestError (400) for bad tensors or a 'class' parameter that is not a string.
EncoderRequest read_encoder_request(const inference::ModelInferRequest& q);
// Before the model runs: RequestError for an output the model lacks, a bad 'classification'
// count or type (400), or an output naming a shared memory region (501).
void check_requested_outputs(const ServedModel& m, const inference::ModelInferRequest& q);
// RequestError (400) for an unknown output or a bad 'classification' count.
void fill_encoder_response(const ServedModel& m, const inference::ModelInferRequest& q, const Tensors& outputs,
                           inference::ModelInferResponse& r);

}  // namespace fusor::serve
