// Triton's LLM interface on KServe's gRPC tensors (serve/kserve_json.h lists the tensors): a
// ModelInferRequest to a decoder read as the fields of a generate body, so that ModelInfer and
// ModelStreamInfer take what POST .../generate takes (serve/triton_generate_request.h), and the
// responses they send back.
#pragma once
#include <string>

#include "kserve.pb.h"
#include "serve/generative_model.h"
#include "serve/triton_generate_request.h"

namespace fusor::serve {

// The request's input tensors (one value each; a list for stop_words), its parameters map and
// its sampling_parameters JSON, as one generate body. RequestError (400) for an input the
// decoder does not take, a wrong datatype, or more than one value.
nlohmann::json generate_body(const inference::ModelInferRequest& q);

struct TensorGenerateRequest {
  TritonGenerateRequest request;
  bool stream = false;  // the "stream" input: a response per token (ModelStreamInfer)
  int64_t prompt_tokens = 0;
};
// RequestError for a body the generate reader refuses (FieldError's status and message).
TensorGenerateRequest read_generate_request(const inference::ModelInferRequest& q, const GenerationTarget& target);

// A generation's responses: text_output as BYTES [1]; the last also carries the outputs the
// request asked for (finish_reason, num_input_tokens, num_output_tokens). On a stream each has
// Triton's "triton_final_response" parameter, true on the last.
class GenerateResponses {
 public:
  GenerateResponses(std::string model, const inference::ModelInferRequest& q, TensorGenerateRequest r);
  const TensorGenerateRequest& request() const { return r_; }
  inference::ModelInferResponse piece(const std::string& text, bool on_stream, bool final = false) const;
  // Whether the last response carries outputs beyond the text (finish_reason, token counts).
  bool has_final_outputs() const;
  inference::ModelInferResponse last(const std::string& text, const GenerationOutcome& o, bool on_stream) const;

 private:
  inference::ModelInferResponse response(bool on_stream, bool final) const;
  bool wanted(const std::string& output) const;

  std::string model_, id_;
  std::vector<std::string> requested_;  // empty: every output
  TensorGenerateRequest r_;
};

}  // namespace fusor::serve
