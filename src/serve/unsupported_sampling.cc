#include "serve/unsupported_sampling.h"

namespace fusor::serve {

void not_implemented(const std::string& param, const std::string& what) {
  throw FieldError{Code::BadRequest, "'" + param + "' " + what + " is not supported by this server", param};
}

void refuse_unsupported_sampling(const RequestFields& f) {
  if (f.integer("n").value_or(1) != 1) not_implemented("n", "other than 1");
  if (f.integer("best_of").value_or(1) != 1) not_implemented("best_of", "other than 1");
  if (const nlohmann::json* b = f.get("logit_bias"); b && !(b->is_object() && b->empty()))
    not_implemented("logit_bias", "(biasing tokens)");
  for (const char* name : {"frequency_penalty", "presence_penalty"})
    if (f.number(name).value_or(0.0) != 0.0) not_implemented(name, "other than 0 (use 'repetition_penalty')");
  if (f.integer("min_tokens").value_or(0) != 0) not_implemented("min_tokens", "other than 0");
  if (f.boolean("include_stop_str_in_output").value_or(false)) not_implemented("include_stop_str_in_output", "true");
  for (const char* name : {"guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs"})
    if (f.has(name)) not_implemented(name, "(guided decoding)");
  // An empty list (or, as Triton's clients send bad_words, an empty string) asks for nothing.
  auto asks = [](const nlohmann::json& v) {
    return !(v.is_array() && v.empty()) && !(v.is_string() && v.get_ref<const std::string&>().empty());
  };
  for (const char* name : {"bad_words", "allowed_token_ids", "logits_processors"})
    if (const nlohmann::json* v = f.get(name); v && asks(*v)) not_implemented(name, "(constraining tokens)");
  if (f.number("min_p").value_or(0.0) != 0.0) not_implemented("min_p", "other than 0");
  if (f.boolean("use_beam_search").value_or(false)) not_implemented("use_beam_search", "true");
  if (f.number("length_penalty").value_or(1.0) != 1.0) not_implemented("length_penalty", "other than 1");
  if (f.has("prompt_logprobs")) not_implemented("prompt_logprobs", "(log probabilities)");
  if (f.has("truncate_prompt_tokens")) not_implemented("truncate_prompt_tokens", "(truncation)");
}

}  // namespace fusor::serve
