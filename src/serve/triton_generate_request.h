// The body of Triton's generate and generate_stream (serve/triton_generate.h) read into a
// GenerationRequest, apart from the routes, so that it builds without HTTP (and is fuzzed:
// tests/fuzz/fuzz_generation_request.cc).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "serve/generation_target.h"

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

}  // namespace fusor::serve
