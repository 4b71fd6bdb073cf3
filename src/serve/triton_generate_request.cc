#include "serve/triton_generate_request.h"

#include "serve/unsupported_sampling.h"

namespace fusor::serve {
namespace {

FieldError bad(const std::string& message, const std::string& param) { return {Code::BadRequest, message, param}; }

// The sampling fields, from "parameters" with the top level's fields over them (TensorRT-LLM's
// ensemble takes them at the top, the vLLM backend inside "parameters").
nlohmann::json merged_fields(const nlohmann::json& body) {
  nlohmann::json fields = nlohmann::json::object();
  if (auto p = body.find("parameters"); p != body.end() && !p->is_null()) {
    if (!p->is_object()) throw bad("'parameters' must be an object", "parameters");
    fields = *p;
  }
  for (auto it = body.begin(); it != body.end(); ++it)
    if (it.key() != "parameters") fields[it.key()] = it.value();
  return fields;
}

}  // namespace

TritonGenerateRequest parse_triton_generate(const nlohmann::json& body, const GenerationTarget& model) {
  const nlohmann::json all = merged_fields(body);
  const RequestFields f(all);
  TritonGenerateRequest r;
  r.id = f.string("id").value_or("");
  const std::optional<std::string> text = f.string("text_input");
  if (!text) throw bad("'text_input' is required", "text_input");
  r.text_input = *text;
  f.boolean("stream");  // accepted and type-checked: the route (generate or generate_stream) decides
  if (f.integer("beam_width").value_or(1) != 1) throw bad("'beam_width' other than 1 is not supported by this server", "beam_width");
  for (const std::string& w : f.strings("embedding_bias_words"))
    if (!w.empty()) throw bad("'embedding_bias_words' is not supported by this server", "embedding_bias_words");
  // The vLLM backend's sampling parameters: silently greedy text where vLLM honours them.
  refuse_unsupported_sampling(f);
  if (const nlohmann::json* l = f.get("logprobs"); l && !(l->is_number_integer() && l->get<int64_t>() == 0))
    not_implemented("logprobs", "(log probabilities)");

  std::vector<TokenId> prompt = encode_prompt(model, r.text_input, true, "text_input");
  if (prompt.empty()) throw bad("'text_input' must not be empty", "text_input");
  GenerateOptions& o = r.generation.options;
  o.max_new_tokens = fit_max_new_tokens(model, static_cast<int64_t>(prompt.size()), f.integer("max_tokens"), "max_tokens");
  std::optional<uint64_t> seed = f.seed("random_seed");
  if (!seed) seed = f.seed("seed");
  o.sampling = sampling_from(model, {.temperature = f.number("temperature"),
                                     .top_p = f.number("top_p"),
                                     .repetition_penalty = f.number("repetition_penalty"),
                                     .top_k = f.integer("top_k"),
                                     .seed = seed});
  for (const char* name : {"stop", "stop_words"})
    for (std::string& s : f.strings(name))
      if (!s.empty()) o.stop.push_back(std::move(s));
  o.ignore_eos = f.boolean("ignore_eos").value_or(false);
  r.generation.cls = f.string("class").value_or("");
  r.include_input = !f.boolean("exclude_input_in_output").value_or(true);
  r.return_finish_reason = f.boolean("return_finish_reason").value_or(false);
  r.return_num_input_tokens = f.boolean("return_num_input_tokens").value_or(false);
  r.return_num_output_tokens = f.boolean("return_num_output_tokens").value_or(false);
  r.generation.prompt = std::move(prompt);
  return r;
}

}  // namespace fusor::serve
