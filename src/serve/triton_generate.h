// Triton's generate extension on the KServe side, for the decoders the server holds:
//   POST /v2/models/{name}[/versions/1]/generate         one JSON answer
//   POST /v2/models/{name}[/versions/1]/generate_stream  server-sent events, one per token
// with the field names Triton's LLM backends (TensorRT-LLM, vLLM) use: "text_input" and the
// sampling fields at the top level or nested in "parameters"; the answer is
// {"model_name", "model_version", "text_output"} (docs/serve-generate.md). Errors are Triton's
// {"error": "..."}; one after a stream started comes as an event of that shape.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "serve/generation_target.h"
#include "serve/server.h"

namespace httplib {
class Server;
}

namespace fusor::serve {

struct TritonGenerateRequest {
  std::string id;  // echoed back when given
  std::string text_input;
  GenerationRequest generation;
  bool include_input = false;  // exclude_input_in_output: false puts the prompt before the text
  bool return_finish_reason = false, return_num_input_tokens = false, return_num_output_tokens = false;
};

// Reads a generate body (a JSON object) for `model`; FieldError on a refusal.
TritonGenerateRequest parse_triton_generate(const nlohmann::json& body, const GenerationTarget& model);

void add_triton_generate_routes(httplib::Server& server, Models& models);

}  // namespace fusor::serve
