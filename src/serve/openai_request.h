// The bodies of OpenAI's POST /v1/completions and /v1/chat/completions, read into a
// GenerationRequest and the response settings, with what fusor does not implement refused by
// name (docs/serve-generate.md lists the fields). Every refusal is a FieldError (400, or 404
// for an unknown model) that the routes answer in OpenAI's error shape.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/generation_target.h"
#include "serve/request_fields.h"

namespace fusor::serve {

enum class OpenAiEndpoint { Completions, ChatCompletions };

struct OpenAiRequest {
  GenerationRequest generation;  // prompt, options, class
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// The body's "model"; "" when absent.
std::string requested_model(const nlohmann::json& body);

// Reads and checks `body` (a JSON object) for `model`. A sampling request without "seed" gets
// a fresh random one. `body_text`, the body as sent, gives the chat messages' keys in their order
// (the parsed body sorts them); without it the template sees them sorted.
OpenAiRequest parse_openai_request(const nlohmann::json& body, OpenAiEndpoint endpoint, const GenerationTarget& model,
                                   std::string_view body_text = {});

// OpenAI's error object: {"error": {"message", "type", "param", "code"}}.
nlohmann::json openai_error_json(const FieldError& e);

}  // namespace fusor::serve
