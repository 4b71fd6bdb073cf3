// What the generation protocols (OpenAI-compatible /v1, Triton's generate) share when they turn
// a body into a GenerationRequest: the model's view (tokenizer, template, limits), the length
// checks against its context, and the sampling options with their ranges checked.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusor/chat_template.h"
#include "fusor/generate.h"
#include "fusor/tokenizer.h"
#include "serve/generative_model.h"
#include "serve/request_fields.h"

namespace fusor::serve {

// What reading a request needs to know of the model; a view, so tests need no engine.
struct GenerationTarget {
  std::string name;
  const Tokenizer* tokenizer = nullptr;  // null: text prompts are refused
  const ChatTemplate* chat_template = nullptr;
  int64_t context_length = 0;  // 0: unknown (no length checks)
  int64_t vocab_size = 0;      // 0: unknown (ids are checked against the tokenizer's only)
  GenerationDefaults defaults;  // the model's generation_config.json: for fields a request leaves out
};
GenerationTarget target_of(const GenerativeModel& model);

// Token ids of a text prompt; FieldError naming `param` without a tokenizer or for bad UTF-8.
std::vector<TokenId> encode_prompt(const GenerationTarget& model, const std::string& text, bool add_special_tokens,
                                   const std::string& param);
// Checks ids given by the client: not empty, each within the vocabulary.
void check_prompt_ids(const GenerationTarget& model, const std::vector<TokenId>& ids, const std::string& param);

// The tokens to generate: `max_tokens` (>= 1) when given, else the model's max_new_tokens
// default, else `default_max`, within what the context leaves, else all it leaves (16 when the context length is unknown). A prompt that leaves
// no room, or a prompt and max_tokens over the context length, is refused naming the numbers.
int64_t fit_max_new_tokens(const GenerationTarget& model, int64_t prompt_tokens, std::optional<int64_t> max_tokens,
                           const std::string& param, std::optional<int64_t> default_max = std::nullopt);

// Sampling from the protocol's fields: temperature 0 is greedy; no seed draws a fresh one. A
// field left out takes the model's generation_config.json value (as vLLM reads it), else
// OpenAI's default (temperature 1); a config whose do_sample is false makes greedy the default.
struct SamplingFields {
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
};
SamplingOptions sampling_from(const GenerationTarget& model, const SamplingFields& f);

}  // namespace fusor::serve
