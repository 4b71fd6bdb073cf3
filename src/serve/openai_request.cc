#include "serve/openai_request.h"

#include <algorithm>
#include <limits>

#include "serve/unsupported_sampling.h"

namespace fusor::serve {
namespace {

FieldError bad(const std::string& message, const std::string& param) { return {Code::BadRequest, message, param}; }

// Fields fusor does not implement: refused when they ask for something, accepted at their
// defaults (clients often send the defaults explicitly).
void refuse_unsupported(const RequestFields& f, OpenAiEndpoint endpoint) {
  refuse_unsupported_sampling(f);
  if (f.boolean("echo").value_or(false)) not_implemented("echo", "true");
  if (f.string("suffix").value_or("") != "") not_implemented("suffix", "(insertion)");
  if (endpoint == OpenAiEndpoint::Completions) {
    if (f.has("logprobs")) not_implemented("logprobs", "(log probabilities)");
  } else {
    if (f.boolean("logprobs").value_or(false)) not_implemented("logprobs", "(log probabilities)");
    if (f.integer("top_logprobs").value_or(0) != 0) not_implemented("top_logprobs", "(log probabilities)");
    // vLLM's chat template extensions; add_generation_prompt is honoured (chat_prompt).
    if (f.boolean("continue_final_message").value_or(false)) not_implemented("continue_final_message", "true");
    if (f.string("chat_template")) not_implemented("chat_template", "(a template per request)");
    if (const nlohmann::json* k = f.get("chat_template_kwargs"); k && !(k->is_object() && k->empty()))
      not_implemented("chat_template_kwargs", "(template variables)");
  }
  for (const char* name : {"tools", "functions"})
    if (const nlohmann::json* t = f.get(name); t && !(t->is_array() && t->empty())) not_implemented(name, "(tool calls)");
  // Without tools, "none" and "auto" both mean plain text; anything else asks for a tool call.
  if (const nlohmann::json* c = f.get("tool_choice"); c && !(c->is_string() && (*c == "none" || *c == "auto")))
    not_implemented("tool_choice", "other than \"none\" or \"auto\" (tool calls)");
  if (const nlohmann::json* r = f.get("response_format")) {
    if (!r->is_object()) throw bad("'response_format' must be an object such as {\"type\": \"text\"}", "response_format");
    if (RequestFields(*r).string("type").value_or("text") != "text") not_implemented("response_format", "other than {\"type\": \"text\"}");
  }
}

// vLLM's stop_token_ids: a list of token ids of the vocabulary.
std::vector<TokenId> stop_token_ids(const RequestFields& f, const GenerationTarget& model) {
  const nlohmann::json* list = f.get("stop_token_ids");
  if (!list) return {};
  if (!list->is_array()) throw bad("'stop_token_ids' must be a list of token ids", "stop_token_ids");
  std::vector<TokenId> ids;
  for (const nlohmann::json& v : *list) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<TokenId>::max())
      throw bad("'stop_token_ids' must be a list of non-negative integers", "stop_token_ids");
    ids.push_back(static_cast<TokenId>(v.get<int64_t>()));
  }
  if (!ids.empty()) check_prompt_ids(model, ids, "stop_token_ids");
  return ids;
}

std::vector<TokenId> ids_of(const nlohmann::json& list) {
  std::vector<TokenId> ids;
  for (const nlohmann::json& v : list) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<TokenId>::max())
      throw bad("'prompt' token ids must be non-negative integers", "prompt");
    ids.push_back(static_cast<TokenId>(v.get<int64_t>()));
  }
  return ids;
}

// "text", ["text"], [1, 2, 3] or [[1, 2, 3]]: one prompt; more than one is refused.
std::vector<TokenId> completion_prompt(const nlohmann::json* p, const GenerationTarget& model) {
  if (!p) throw bad("'prompt' is required", "prompt");
  if (p->is_string()) return encode_prompt(model, p->get<std::string>(), true, "prompt");
  if (!p->is_array()) throw bad("'prompt' must be a string, a list of token ids, or a list of one of them", "prompt");
  if (p->empty()) throw bad("'prompt' must not be empty", "prompt");
  const nlohmann::json& first = p->front();
  if (first.is_number()) {
    std::vector<TokenId> ids = ids_of(*p);
    check_prompt_ids(model, ids, "prompt");
    return ids;
  }
  if (p->size() > 1) throw bad("'prompt' holds " + std::to_string(p->size()) + " prompts; this server takes one per request", "prompt");
  if (first.is_string()) return encode_prompt(model, first.get<std::string>(), true, "prompt");
  if (first.is_array()) {
    std::vector<TokenId> ids = ids_of(first);
    check_prompt_ids(model, ids, "prompt");
    return ids;
  }
  throw bad("'prompt' must be a string, a list of token ids, or a list of one of them", "prompt");
}

// A message's content: a string, or parts (strings, or objects of type "text") joined by
// newlines, as vLLM joins them.
std::string message_content(const nlohmann::json& m, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) throw bad("'" + where + "' must be a string or a list of content parts", "messages");
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& part = (*it)[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (i > 0) text += "\n";
    if (part.is_string()) {
      text += part.get<std::string>();
      continue;
    }
    if (!part.is_object()) throw bad("'" + at + "' must be a string or an object", "messages");
    auto type = part.find("type");
    const std::string type_name = type != part.end() && type->is_string() ? type->get<std::string>() : "";
    if (type_name != "text") throw bad("'" + at + "' has type '" + type_name + "'; this server takes text parts only", "messages");
    auto value = part.find("text");
    if (value == part.end() || !value->is_string()) throw bad("'" + at + ".text' must be a string", "messages");
    text += value->get<std::string>();
  }
  return text;
}

// A message's fields besides role and content, for the template (a tool call's history: the
// assistant's tool_calls, a tool message's tool_call_id and name). As vLLM does, a tool call's
// `function.arguments`, a JSON string in OpenAI's API, reaches the template parsed, since the
// templates (Llama 3.1, Qwen 2.5) write it with tojson.
nlohmann::ordered_json other_fields(const nlohmann::ordered_json& m) {
  nlohmann::ordered_json fields = m;
  fields.erase("role");
  fields.erase("content");
  if (auto calls = fields.find("tool_calls"); calls != fields.end() && calls->is_array())
    for (nlohmann::ordered_json& call : *calls)
      if (call.is_object() && call.contains("function") && call["function"].is_object()) {
        nlohmann::ordered_json& function = call["function"];
        auto arguments = function.find("arguments");
        if (arguments == function.end() || !arguments->is_string()) continue;
        nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(arguments->get<std::string>(), nullptr, false);
        if (parsed.is_object()) *arguments = std::move(parsed);
      }
  return fields;
}

// The messages with their keys in the order the client wrote them, read again from the body's
// text: a template that iterates a tool call's arguments, or writes them with tojson, shows them
// in that order, as Python's dicts keep it. Without the text, the parsed body's (sorted) order.
nlohmann::ordered_json messages_in_order(std::string_view body_text, const nlohmann::json& messages) {
  if (!body_text.empty()) {
    nlohmann::ordered_json body = nlohmann::ordered_json::parse(body_text, nullptr, false);
    if (body.is_object() && body.contains("messages") && body["messages"].size() == messages.size()) return body["messages"];
  }
  return nlohmann::ordered_json::parse(messages.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// A message's content as vLLM gives a template that loops over it: a list of text parts (a
// string is one part, none is no part).
nlohmann::ordered_json content_parts(const nlohmann::json& m) {
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) return parts;
  if (it->is_string()) {
    parts.push_back({{"type", "text"}, {"text", *it}});
    return parts;
  }
  for (const auto& part : *it)  // message_content checked them: strings or text objects
    parts.push_back({{"type", "text"}, {"text", part.is_string() ? part : part.at("text")}});
  return parts;
}

std::vector<TokenId> chat_prompt(const nlohmann::json* messages, std::string_view body_text, bool add_generation_prompt,
                                 const GenerationTarget& model) {
  if (!messages) throw bad("'messages' is required", "messages");
  if (!messages->is_array() || messages->empty()) throw bad("'messages' must be a non-empty list of messages", "messages");
  // Read again in order only when some message has fields besides its role and content.
  const bool other = std::any_of(messages->begin(), messages->end(), [](const nlohmann::json& m) {
    return m.is_object() && m.size() > m.count("role") + m.count("content");
  });
  const nlohmann::ordered_json in_order = other ? messages_in_order(body_text, *messages) : nlohmann::ordered_json();
  std::vector<ChatMessage> chat;
  for (size_t i = 0; i < messages->size(); ++i) {
    const nlohmann::json& m = (*messages)[i];
    if (!m.is_object()) throw bad("'messages[" + std::to_string(i) + "]' must be an object", "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      throw bad("'messages[" + std::to_string(i) + "].role' must be a string", "messages");
    chat.push_back({role->get<std::string>(), message_content(m, i), ""});
  }
  if (!model.chat_template) throw bad("model '" + model.name + "' has no chat template", "messages");
  for (size_t i = 0; i < chat.size(); ++i) {
    nlohmann::ordered_json fields = other ? other_fields(in_order[i]) : nlohmann::ordered_json::object();
    if (model.chat_template->loops_over_content()) fields["content"] = content_parts((*messages)[i]);
    if (!fields.empty()) chat[i].fields_json = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string text;
  try {
    text = model.chat_template->apply(chat, add_generation_prompt);
  } catch (const Error& e) {
    throw bad(std::string("cannot apply the chat template: ") + e.what(), "messages");
  }
  // A model's own template writes its special tokens (BOS included); the plain one does not.
  return encode_prompt(model, text, model.chat_template->is_plain(), "messages");
}

}  // namespace

std::string requested_model(const nlohmann::json& body) { return RequestFields(body).string("model").value_or(""); }

OpenAiRequest parse_openai_request(const nlohmann::json& body, OpenAiEndpoint endpoint, const GenerationTarget& model,
                                   std::string_view body_text) {
  const RequestFields f(body);
  refuse_unsupported(f, endpoint);
  OpenAiRequest r;
  r.stream = f.boolean("stream").value_or(false);
  if (const nlohmann::json* so = f.get("stream_options")) {
    if (!r.stream) throw bad("'stream_options' is allowed only when 'stream' is true", "stream_options");
    if (!so->is_object()) throw bad("'stream_options' must be an object", "stream_options");
    r.include_usage = RequestFields(*so).boolean("include_usage").value_or(false);
  }
  f.string("user");  // accepted, type-checked, unused
  r.generation.cls = f.string("fusor_class").value_or("");

  std::vector<TokenId> prompt = endpoint == OpenAiEndpoint::Completions ? completion_prompt(f.get("prompt"), model)
                                                                         : chat_prompt(f.get("messages"), body_text,
                                                                                       f.boolean("add_generation_prompt").value_or(true), model);
  GenerateOptions& o = r.generation.options;
  std::optional<int64_t> max_tokens = f.integer("max_completion_tokens");
  std::string max_param = "max_completion_tokens";
  if (!max_tokens) {
    max_tokens = f.integer("max_tokens");
    max_param = "max_tokens";
  }
  // Without max_tokens a completion has 16 tokens, as OpenAI's and vLLM's; a chat, what the
  // context leaves (vLLM's).
  constexpr int64_t kCompletionDefaultTokens = 16;
  o.max_new_tokens = fit_max_new_tokens(model, static_cast<int64_t>(prompt.size()), max_tokens, max_param,
                                        endpoint == OpenAiEndpoint::Completions ? std::optional<int64_t>(kCompletionDefaultTokens)
                                                                                : std::nullopt);
  o.sampling = sampling_from(model, {.temperature = f.number("temperature"),
                                     .top_p = f.number("top_p"),
                                     .repetition_penalty = f.number("repetition_penalty"),
                                     .top_k = f.integer("top_k"),
                                     .seed = f.seed("seed")});
  for (std::string& s : f.strings("stop"))
    if (!s.empty()) o.stop.push_back(std::move(s));
  if (!o.stop.empty() && !model.tokenizer) throw bad("'stop' needs the model's tokenizer.json", "stop");
  o.ignore_eos = f.boolean("ignore_eos").value_or(false);
  o.stop_ids = stop_token_ids(f, model);
  o.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  r.generation.prompt = std::move(prompt);
  return r;
}

nlohmann::json openai_error_json(const FieldError& e) {
  const char* type = e.code == Code::BadRequest    ? "invalid_request_error"
                     : e.code == Code::NotFound    ? "invalid_request_error"
                     : e.code == Code::Unavailable ? "service_unavailable_error"
                     : e.code == Code::Unsupported ? "invalid_request_error"
                                                   : "server_error";
  nlohmann::json code = nullptr;
  if (e.code == Code::NotFound && e.param == "model") code = "model_not_found";
  if (!e.kind.empty()) code = e.kind;
  return {{"error",
           {{"message", e.message},
            {"type", type},
            {"param", e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param)},
            {"code", code}}}};
}

}  // namespace fusor::serve
