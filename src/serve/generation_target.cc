#include "serve/generation_target.h"

#include <algorithm>
#include <limits>
#include <random>

#include "fusor/error.h"

namespace fusor::serve {
namespace {

FieldError bad(const std::string& message, const std::string& param) { return {Code::BadRequest, message, param}; }

}  // namespace

std::vector<TokenId> encode_prompt(const GenerationTarget& model, const std::string& text, bool add_special_tokens,
                                   const std::string& param) {
  if (!model.tokenizer)
    throw bad("model '" + model.name + "' has no tokenizer.json: give the prompt as token ids", param);
  try {
    return model.tokenizer->encode(text, add_special_tokens);
  } catch (const Error& e) {
    throw bad(std::string("cannot tokenize '") + param + "': " + e.what(), param);
  }
}

void check_prompt_ids(const GenerationTarget& model, const std::vector<TokenId>& ids, const std::string& param) {
  if (ids.empty()) throw bad("'" + param + "' must not be empty", param);
  int64_t vocab = model.vocab_size;
  if (model.tokenizer) vocab = std::max<int64_t>(vocab, static_cast<int64_t>(model.tokenizer->vocab_size()));
  for (TokenId id : ids)
    if (id < 0 || (vocab > 0 && id >= vocab))
      throw bad("token id " + std::to_string(id) + " in '" + param + "' is outside the vocabulary [0, " +
                    std::to_string(vocab) + ")",
                param);
}

int64_t fit_max_new_tokens(const GenerationTarget& model, int64_t prompt_tokens, std::optional<int64_t> max_tokens,
                           const std::string& param, std::optional<int64_t> default_max) {
  if (max_tokens && *max_tokens < 1)
    throw bad("'" + param + "' must be at least 1, not " + std::to_string(*max_tokens), param);
  if (model.defaults.max_new_tokens) default_max = model.defaults.max_new_tokens;
  const int64_t context = model.context_length;
  if (context <= 0) return max_tokens.value_or(default_max.value_or(16));
  const int64_t room = context_room(prompt_tokens, context);
  // OpenAI's code for both, which clients check to shorten the prompt and retry.
  auto too_long = [](std::string message, std::string param) {
    return FieldError{Code::BadRequest, std::move(message), std::move(param), "context_length_exceeded"};
  };
  if (room == 0)
    throw too_long("This model's maximum context length is " + std::to_string(context) + " tokens. However, your prompt has " +
                       std::to_string(prompt_tokens) + " tokens, which leaves no room to generate. Please reduce the length of the prompt.",
                   "");
  if (!max_tokens) return default_max ? std::min(*default_max, room) : room;
  if (*max_tokens > room)
    throw too_long("This model's maximum context length is " + std::to_string(context) + " tokens. However, you requested " +
                       std::to_string(prompt_tokens + *max_tokens) + " tokens (" + std::to_string(prompt_tokens) +
                       " in the prompt, " + std::to_string(*max_tokens) + " in the completion). Please reduce the length of the prompt or " +
                       param + ".",
                   param);
  return *max_tokens;
}

SamplingOptions sampling_from(const GenerationTarget& model, const SamplingFields& f) {
  SamplingOptions s;
  const GenerationDefaults& d = model.defaults;
  const double temperature = f.temperature ? *f.temperature : d.do_sample == false ? 0.0 : d.temperature.value_or(1.0);
  if (temperature < 0 || temperature > 100) throw bad("'temperature' must be in [0, 100], not " + std::to_string(temperature), "temperature");
  const double top_p = f.top_p ? *f.top_p : d.top_p.value_or(1.0);
  if (!(top_p > 0 && top_p <= 1)) throw bad("'top_p' must be in (0, 1], not " + std::to_string(top_p), "top_p");
  const int64_t top_k = f.top_k ? *f.top_k : d.top_k.value_or(0);
  if (top_k < -1) throw bad("'top_k' must be -1 (all), 0 (all) or more, not " + std::to_string(top_k), "top_k");
  const double repetition = f.repetition_penalty ? *f.repetition_penalty : d.repetition_penalty.value_or(1.0);
  if (!(repetition > 0 && repetition <= 100))
    throw bad("'repetition_penalty' must be in (0, 100], not " + std::to_string(repetition), "repetition_penalty");
  s.do_sample = temperature > 0;
  // A positive temperature below float's range (1e-300) stays positive: near greedy, not refused.
  s.temperature = temperature > 0 ? std::max(static_cast<float>(temperature), std::numeric_limits<float>::min()) : 1.0f;
  s.top_p = static_cast<float>(top_p);
  s.top_k = top_k < 0 ? 0 : top_k;
  s.repetition_penalty = static_cast<float>(repetition);
  if (f.seed) {
    s.seed = *f.seed;
  } else {
    static thread_local std::mt19937_64 seeds{std::random_device{}()};
    s.seed = seeds();
  }
  return s;
}

}  // namespace fusor::serve
