// The bodies OpenAI's /v1/completions and /v1/chat/completions answer with: the whole object,
// and for a stream its chunks (chat's first carries the role; the last the finish reason; an
// optional usage chunk with no choices). One OpenAiResponder per request keeps its id and time.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "serve/generative_model.h"
#include "serve/openai_request.h"

namespace fusor::serve {

class OpenAiResponder {
 public:
  OpenAiResponder(OpenAiEndpoint endpoint, std::string model, int64_t prompt_tokens);

  nlohmann::json full(const GenerationOutcome& outcome) const;
  nlohmann::json role_chunk() const;  // chat only: delta {"role": "assistant", "content": ""}
  nlohmann::json text_chunk(std::string_view text) const;
  // text_chunk's server-sent event (sse_json_event of it, the same bytes), from the chunk's text
  // before and after its one varying field, built once: a token's JSON object built and dumped
  // took ~10 us of a stream thread, 16 times a step.
  std::string text_chunk_event(std::string_view text) const;
  nlohmann::json finish_chunk(const GenerationOutcome& outcome) const;
  nlohmann::json usage_chunk(const GenerationOutcome& outcome) const;  // choices: []
  nlohmann::json usage(const GenerationOutcome& outcome) const;
  const std::string& id() const { return id_; }

 private:
  nlohmann::json envelope(bool chunk) const;
  bool chat() const { return endpoint_ == OpenAiEndpoint::ChatCompletions; }

  OpenAiEndpoint endpoint_;
  std::string model_, id_;
  int64_t created_;
  int64_t prompt_tokens_;
  std::string chunk_before_, chunk_after_;  // a text chunk's event around its text's JSON string
};

// OpenAI has "stop" and "length"; a cancelled request ("abort") is reported as vLLM does.
std::string openai_finish_reason(const GenerationOutcome& outcome);

// The JSON text of a body; invalid UTF-8 from a model is replaced, never thrown.
std::string dump_json(const nlohmann::json& j);

}  // namespace fusor::serve
