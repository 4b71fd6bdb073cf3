#include "serve/openai_response.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "serve/sse_stream.h"

namespace fusor::serve {
namespace {

std::string random_hex(int digits) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out;
  while (static_cast<int>(out.size()) < digits) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    out += buf;
  }
  return out.substr(0, digits);
}

}  // namespace

std::string dump_json(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string openai_finish_reason(const GenerationOutcome& outcome) {
  return outcome.finish_reason.empty() ? "stop" : outcome.finish_reason;
}

OpenAiResponder::OpenAiResponder(OpenAiEndpoint endpoint, std::string model, int64_t prompt_tokens)
    : endpoint_(endpoint),
      model_(std::move(model)),
      id_((endpoint == OpenAiEndpoint::ChatCompletions ? "chatcmpl-" : "cmpl-") + random_hex(24)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      prompt_tokens_(prompt_tokens) {
  // A marker stands in for the text's JSON string: the first one in the event, as "choices"
  // sorts before the other fields (a model name holding the marker comes after it).
  const std::string marker = "\"\\u0001\"";
  const std::string event = sse_json_event(text_chunk("\x01"));
  const size_t at = event.find(marker);
  chunk_before_ = event.substr(0, at);
  chunk_after_ = event.substr(at + marker.size());
}

std::string OpenAiResponder::text_chunk_event(std::string_view text) const {
  return chunk_before_ + nlohmann::json(text).dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) +
         chunk_after_;
}

nlohmann::json OpenAiResponder::envelope(bool chunk) const {
  const char* object = chat() ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
}

nlohmann::json OpenAiResponder::usage(const GenerationOutcome& outcome) const {
  const int64_t completion = static_cast<int64_t>(outcome.result.output_ids.size());
  return {{"prompt_tokens", prompt_tokens_}, {"completion_tokens", completion}, {"total_tokens", prompt_tokens_ + completion}};
}

nlohmann::json OpenAiResponder::full(const GenerationOutcome& outcome) const {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", openai_finish_reason(outcome)}, {"logprobs", nullptr}};
  if (chat()) choice["message"] = {{"role", "assistant"}, {"content", outcome.result.text}};
  else choice["text"] = outcome.result.text;
  nlohmann::json j = envelope(false);
  j["choices"] = nlohmann::json::array({choice});
  j["usage"] = usage(outcome);
  return j;
}

nlohmann::json OpenAiResponder::role_chunk() const {
  nlohmann::json j = envelope(true);
  j["choices"] = nlohmann::json::array(
      {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}, {"logprobs", nullptr}}});
  return j;
}

nlohmann::json OpenAiResponder::text_chunk(std::string_view text) const {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", nullptr}, {"logprobs", nullptr}};
  if (chat()) choice["delta"] = {{"content", text}};
  else choice["text"] = text;
  nlohmann::json j = envelope(true);
  j["choices"] = nlohmann::json::array({choice});
  return j;
}

nlohmann::json OpenAiResponder::finish_chunk(const GenerationOutcome& outcome) const {
  nlohmann::json choice = {{"index", 0}, {"finish_reason", openai_finish_reason(outcome)}, {"logprobs", nullptr}};
  if (chat()) choice["delta"] = nlohmann::json::object();
  else choice["text"] = "";
  nlohmann::json j = envelope(true);
  j["choices"] = nlohmann::json::array({choice});
  return j;
}

nlohmann::json OpenAiResponder::usage_chunk(const GenerationOutcome& outcome) const {
  nlohmann::json j = envelope(true);
  j["choices"] = nlohmann::json::array();
  j["usage"] = usage(outcome);
  return j;
}

}  // namespace fusor::serve
