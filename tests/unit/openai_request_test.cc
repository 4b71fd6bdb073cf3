// The generation protocols' request reading (serve/openai_request.h, serve/triton_generate.h)
// on the real llama-tiny tokenizer: every prompt form, the fields honoured, every refusal and
// wrong type (a 400 naming the field, never a crash); the response bodies' shapes; and the
// queue that carries events from the scheduler's thread to the HTTP thread.
#include <gtest/gtest.h>

#include <limits>

#include <thread>

#include "fusor/chat_template.h"
#include "fusor/tokenizer.h"
#include "serve/generation_stream.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "serve/sse_stream.h"
#include "serve/triton_generate.h"

namespace fusor::serve {
namespace {

using nlohmann::json;

const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::load(std::string(FUSOR_SOURCE_DIR) + "/models/llama-tiny");
  return t;
}

const ChatTemplate kPlain = ChatTemplate::plain();

GenerationTarget target() {
  return {.name = "llama", .tokenizer = &tokenizer(), .chat_template = &kPlain, .context_length = 512, .vocab_size = 8192, .defaults = {}};
}

OpenAiRequest completion(json body) {
  body["model"] = "llama";
  return parse_openai_request(body, OpenAiEndpoint::Completions, target());
}

OpenAiRequest chat(json body) {
  return parse_openai_request(body, OpenAiEndpoint::ChatCompletions, target());
}

// The refusal's message and field, for `body` on the completions endpoint.
FieldError completion_error(const json& body, OpenAiEndpoint endpoint = OpenAiEndpoint::Completions) {
  try {
    parse_openai_request(body, endpoint, target());
  } catch (const FieldError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body.dump();
  return {};
}

TEST(OpenAiRequest, TextPromptIsEncodedWithSpecialTokensAndDefaultsAsOpenAisAndVllms) {
  OpenAiRequest r = completion({{"prompt", "Once upon a time"}});
  EXPECT_EQ(r.generation.prompt, tokenizer().encode("Once upon a time", true));
  EXPECT_EQ(r.generation.options.max_new_tokens, 16);  // a completion's default; a chat fills the context
  EXPECT_EQ(completion({{"prompt", std::vector<int>(500, 5)}}).generation.options.max_new_tokens, 12);  // what is left
  EXPECT_EQ(chat({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}).generation.options.max_new_tokens,
            512 - static_cast<int64_t>(chat({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}).generation.prompt.size()));
  EXPECT_TRUE(r.generation.options.sampling.do_sample);  // OpenAI's default temperature is 1
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.generation.cls, "");
  EXPECT_TRUE(r.generation.options.stop.empty());
}

TEST(OpenAiRequest, EveryPromptFormGivesOnePrompt) {
  const std::vector<TokenId> ids = {1, 450, 4996};
  EXPECT_EQ(completion({{"prompt", json::array({"Hello"})}}).generation.prompt, tokenizer().encode("Hello"));
  EXPECT_EQ(completion({{"prompt", ids}}).generation.prompt, ids);
  EXPECT_EQ(completion({{"prompt", json::array({ids})}}).generation.prompt, ids);
}

TEST(OpenAiRequest, FieldsHonoured) {
  OpenAiRequest r = completion({{"prompt", "Hi"},
                                {"max_tokens", 7},
                                {"temperature", 0.5},
                                {"top_p", 0.9},
                                {"top_k", 40},
                                {"seed", 1234},
                                {"stop", "\n"},
                                {"ignore_eos", true},
                                {"user", "someone"},
                                {"fusor_class", "interactive"},
                                {"stream", true},
                                {"stream_options", {{"include_usage", true}}},
                                {"frequency_penalty", 0},
                                {"presence_penalty", 0.0},
                                {"n", 1},
                                {"logprobs", nullptr},
                                {"echo", false},
                                {"logit_bias", json::object()},
                                {"some_future_field", {1, 2}}});
  const GenerateOptions& o = r.generation.options;
  EXPECT_EQ(o.max_new_tokens, 7);
  EXPECT_TRUE(o.sampling.do_sample);
  EXPECT_FLOAT_EQ(o.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(o.sampling.top_p, 0.9f);
  EXPECT_EQ(o.sampling.top_k, 40);
  EXPECT_EQ(o.sampling.seed, 1234u);
  EXPECT_EQ(o.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(o.ignore_eos);
  EXPECT_EQ(r.generation.cls, "interactive");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);

  EXPECT_FALSE(completion({{"prompt", "Hi"}, {"temperature", 0}}).generation.options.sampling.do_sample);
  EXPECT_EQ(completion({{"prompt", "Hi"}, {"top_k", -1}}).generation.options.sampling.top_k, 0);
  EXPECT_EQ(completion({{"prompt", "Hi"}, {"stop", {"a", "", "bc"}}}).generation.options.stop,
            (std::vector<std::string>{"a", "bc"}));
  // max_completion_tokens (the newer name) wins over max_tokens.
  EXPECT_EQ(completion({{"prompt", "Hi"}, {"max_tokens", 9}, {"max_completion_tokens", 3}}).generation.options.max_new_tokens, 3);
  EXPECT_EQ(completion({{"prompt", "Hi"}, {"max_tokens", 16.0}}).generation.options.max_new_tokens, 16);
}

// vLLM's reading of generation_config.json: its keys replace OpenAI's defaults, a field given wins.
TEST(OpenAiRequest, TheModelsGenerationConfigFillsTheFieldsLeftOut) {
  GenerationTarget t = target();
  t.defaults = {.do_sample = false, .temperature = {}, .top_p = {}, .repetition_penalty = 1.3, .top_k = {}, .max_new_tokens = 5};
  const json hi = {{"model", "llama"}, {"prompt", "Hi"}};
  GenerateOptions o = parse_openai_request(hi, OpenAiEndpoint::Completions, t).generation.options;
  EXPECT_FALSE(o.sampling.do_sample);  // do_sample false: greedy, where OpenAI's temperature 1 samples
  EXPECT_FLOAT_EQ(o.sampling.repetition_penalty, 1.3f);
  EXPECT_EQ(o.max_new_tokens, 5);
  EXPECT_EQ(parse_openai_request({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, OpenAiEndpoint::ChatCompletions, t)
                .generation.options.max_new_tokens,
            5);
  json given = hi;
  given.update({{"temperature", 0.7}, {"repetition_penalty", 1.0}, {"max_tokens", 9}});
  o = parse_openai_request(given, OpenAiEndpoint::Completions, t).generation.options;
  EXPECT_TRUE(o.sampling.do_sample);
  EXPECT_FLOAT_EQ(o.sampling.temperature, 0.7f);
  EXPECT_FLOAT_EQ(o.sampling.repetition_penalty, 1.0f);
  EXPECT_EQ(o.max_new_tokens, 9);
  t.defaults = {.do_sample = {}, .temperature = 0.6, .top_p = 0.9, .repetition_penalty = {}, .top_k = 20, .max_new_tokens = {}};
  o = parse_triton_generate({{"text_input", "Hi"}}, t).generation.options;
  EXPECT_TRUE(o.sampling.do_sample);
  EXPECT_FLOAT_EQ(o.sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(o.sampling.top_p, 0.9f);
  EXPECT_EQ(o.sampling.top_k, 20);
}

// vLLM passes a message's other fields to the template, a tool call's arguments parsed from JSON.
TEST(OpenAiRequest, AToolCallsHistoryReachesTheTemplate) {
  const ChatTemplate tools = ChatTemplate::parse(
      "{% for m in messages %}{{ m.role }}:{{ m.content }}{% for c in m.tool_calls or [] %}"
      "{{ c.function.name }}{{ c.function.arguments | tojson }}{% endfor %}{{ m.tool_call_id }};{% endfor %}");
  GenerationTarget t = target();
  t.chat_template = &tools;
  const json messages = {
      {{"role", "user"}, {"content", "Weather?"}},
      {{"role", "assistant"}, {"content", nullptr},
       {"tool_calls", {{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "get"}, {"arguments", "{\"city\": \"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "20C"}}};
  const OpenAiRequest r = parse_openai_request({{"messages", messages}}, OpenAiEndpoint::ChatCompletions, t);
  EXPECT_EQ(r.generation.prompt, tokenizer().encode("user:Weather?;assistant:get{\"city\": \"Paris\"};tool:20Cc1;", false));
}

// Python's dicts keep the client's key order, and so must the template's: the parsed body sorts
// them, so the messages are read again from the body's text.
TEST(OpenAiRequest, AMessagesKeysKeepTheClientsOrder) {
  const ChatTemplate tools = ChatTemplate::parse(
      "{% for m in messages %}{% for c in m.tool_calls or [] %}{% for k, v in c.function.arguments.items() %}{{ k }}={{ v }};"
      "{% endfor %}{{ c | tojson }}{% endfor %}{% endfor %}");
  GenerationTarget t = target();
  t.chat_template = &tools;
  const std::string text =
      R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "id": "c1",)"
      R"( "function": {"name": "get", "arguments": "{\"unit\": \"c\", \"city\": \"Paris\"}"}}]}]})";
  const OpenAiRequest r = parse_openai_request(json::parse(text), OpenAiEndpoint::ChatCompletions, t, text);
  EXPECT_EQ(r.generation.prompt,
            tokenizer().encode("unit=c;city=Paris;{\"type\": \"function\", \"id\": \"c1\", \"function\": {\"name\": \"get\", "
                               "\"arguments\": {\"unit\": \"c\", \"city\": \"Paris\"}}}",
                               false));
}

// A template that loops over a message's content (Gemma 3's, Llama 4's) gets it as text parts,
// as vLLM passes it (its "openai" content format): Gemma 3 trims each part and joins them with
// nothing, where the one string joined with newlines reads differently. Other templates get the
// joined string.
TEST(OpenAiRequest, ATemplateThatLoopsOverContentGetsItsParts) {
  const ChatTemplate parts = ChatTemplate::parse(
      "{% for m in messages %}{% if m['content'] is string %}S:{{ m['content'] }}{% else %}"
      "{% for p in m['content'] %}[{{ p.type }}:{{ p.text | trim }}]{% endfor %}{% endif %};{% endfor %}");
  const ChatTemplate joined = ChatTemplate::parse("{% for m in messages %}{{ m.content }};{% endfor %}");
  EXPECT_TRUE(parts.loops_over_content());
  EXPECT_FALSE(joined.loops_over_content());
  const json messages = {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", " a "}}, "b"}}},
                         {{"role", "user"}, {"content", "c"}},
                         {{"role", "assistant"}, {"content", nullptr}}};
  GenerationTarget t = target();
  t.chat_template = &parts;
  EXPECT_EQ(parse_openai_request({{"messages", messages}}, OpenAiEndpoint::ChatCompletions, t).generation.prompt,
            tokenizer().encode("[text:a][text:b];[text:c];;", false));
  t.chat_template = &joined;
  EXPECT_EQ(parse_openai_request({{"messages", messages}}, OpenAiEndpoint::ChatCompletions, t).generation.prompt,
            tokenizer().encode(" a \nb;c;;", false));
}

TEST(OpenAiRequest, UnseededSamplingDrawsAFreshSeed) {
  EXPECT_NE(completion({{"prompt", "Hi"}}).generation.options.sampling.seed,
            completion({{"prompt", "Hi"}}).generation.options.sampling.seed);
}

TEST(OpenAiRequest, ChatMessagesGoThroughTheTemplate) {
  const json messages = {{{"role", "system"}, {"content", "Be brief."}},
                         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Hello"}}, "there"}}}};
  OpenAiRequest r = chat({{"model", "llama"}, {"messages", messages}, {"max_completion_tokens", 5}});
  const std::vector<ChatMessage> expected = {{"system", "Be brief.", ""}, {"user", "Hello\nthere", ""}};  // joined as vLLM joins parts
  EXPECT_EQ(r.generation.prompt, tokenizer().encode(kPlain.apply(expected, true), true));
  EXPECT_EQ(r.generation.options.max_new_tokens, 5);
}

TEST(OpenAiRequest, NotImplementedIsRefusedByName) {
  const json prompt = {{"prompt", "Hi"}};
  auto refused = [&](const char* field, json value, OpenAiEndpoint endpoint = OpenAiEndpoint::Completions) {
    json body = endpoint == OpenAiEndpoint::Completions ? prompt : json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
    body[field] = value;
    FieldError e = completion_error(body, endpoint);
    EXPECT_EQ(e.code, Code::BadRequest) << field;
    EXPECT_EQ(e.param, field);
    EXPECT_NE(e.message.find(field), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("not supported"), std::string::npos) << e.message;
  };
  refused("n", 2);
  refused("best_of", 3);
  refused("logprobs", 1);
  refused("logprobs", 0);
  refused("logprobs", true, OpenAiEndpoint::ChatCompletions);
  refused("top_logprobs", 2, OpenAiEndpoint::ChatCompletions);
  refused("echo", true);
  refused("logit_bias", {{"50256", -100}});
  refused("tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}, OpenAiEndpoint::ChatCompletions);
  refused("functions", {{{"name", "f"}}}, OpenAiEndpoint::ChatCompletions);
  refused("response_format", {{"type", "json_object"}}, OpenAiEndpoint::ChatCompletions);
  refused("suffix", "tail");
  refused("frequency_penalty", 0.5);
  refused("presence_penalty", -1);
}

TEST(OpenAiRequest, PromptsOverTheContextAreRefusedNamingBothNumbers) {
  FieldError e = completion_error({{"prompt", std::vector<TokenId>(600, 5)}});
  EXPECT_EQ(e.code, Code::BadRequest);
  EXPECT_NE(e.message.find("512"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("600"), std::string::npos) << e.message;
  e = completion_error({{"prompt", std::vector<TokenId>(500, 5)}, {"max_tokens", 20}});
  EXPECT_NE(e.message.find("512"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("520"), std::string::npos) << e.message;
  EXPECT_EQ(e.param, "max_tokens");
  // Exactly filling the context is fine.
  EXPECT_EQ(completion({{"prompt", std::vector<TokenId>(500, 5)}, {"max_tokens", 12}}).generation.options.max_new_tokens, 12);
}

TEST(OpenAiRequest, BadPromptsAndMessages) {
  auto param_of = [](const json& body, OpenAiEndpoint endpoint = OpenAiEndpoint::Completions) {
    return completion_error(body, endpoint).param;
  };
  EXPECT_EQ(param_of(json::object()), "prompt");
  EXPECT_EQ(param_of({{"prompt", {"one", "two"}}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", {{1, 2}, {3}}}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", json::array()}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", {{}}}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", {1, -2}}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", {1, 8192}}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", {1, 2.5}}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", 5}}), "prompt");
  EXPECT_EQ(param_of({{"prompt", {true}}}), "prompt");
  const auto chat_ep = OpenAiEndpoint::ChatCompletions;
  EXPECT_EQ(param_of(json::object(), chat_ep), "messages");
  EXPECT_EQ(param_of({{"messages", "hi"}}, chat_ep), "messages");
  EXPECT_EQ(param_of({{"messages", json::array()}}, chat_ep), "messages");
  EXPECT_EQ(param_of({{"messages", {{{"content", "no role"}}}}}, chat_ep), "messages");
  EXPECT_EQ(param_of({{"messages", {{{"role", "user"}, {"content", 5}}}}}, chat_ep), "messages");
  EXPECT_EQ(param_of({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}, chat_ep), "messages");
  // Text that is not UTF-8 cannot get this far: the JSON parser refuses it.
  EXPECT_THROW(parse_json_object("{\"prompt\": \"\xff\"}"), FieldError);
}

TEST(OpenAiRequest, WrongTypesAndRangesNameTheField) {
  const std::vector<std::pair<const char*, json>> cases = {
      {"max_tokens", "ten"}, {"max_tokens", 0},       {"max_tokens", 1.5},     {"temperature", "hot"},
      {"temperature", -1},   {"top_p", 0},            {"top_p", 1.5},          {"top_k", -2},
      {"seed", "x"},         {"stream", "yes"},       {"stop", 5},             {"stop", {"a", 1}},
      {"ignore_eos", 1},     {"fusor_class", 3},      {"user", 1},             {"model", 5},
      {"repetition_penalty", 0}, {"n", "two"}};
  for (const auto& [field, value] : cases) {
    json body = {{"prompt", "Hi"}};
    body[field] = value;
    FieldError e;
    try {
      if (std::string(field) == "model") {
        requested_model(body);
      } else {
        parse_openai_request(body, OpenAiEndpoint::Completions, target());
      }
      ADD_FAILURE() << field << " = " << value.dump() << " was accepted";
      continue;
    } catch (const FieldError& err) {
      e = err;
    }
    EXPECT_EQ(e.code, Code::BadRequest);
    EXPECT_EQ(e.param, field) << e.message;
  }
  EXPECT_EQ(completion_error({{"prompt", "Hi"}, {"stream_options", {{"include_usage", true}}}}).param, "stream_options");
}

TEST(OpenAiRequest, BodiesThatAreNotJsonObjects) {
  for (const char* body : {"", "{", "[1, 2]", "\"text\"", "{\"prompt\": }", "null"}) {
    try {
      parse_json_object(body);
      ADD_FAILURE() << "accepted " << body;
    } catch (const FieldError& e) {
      EXPECT_EQ(e.code, Code::BadRequest);
    }
  }
}

TEST(OpenAiRequest, TextPromptWithoutTokenizerIsRefused) {
  GenerationTarget t = target();
  t.tokenizer = nullptr;
  EXPECT_THROW(parse_openai_request({{"prompt", "Hi"}}, OpenAiEndpoint::Completions, t), FieldError);
  EXPECT_EQ(parse_openai_request({{"prompt", {1, 2}}}, OpenAiEndpoint::Completions, t).generation.prompt,
            (std::vector<TokenId>{1, 2}));
  EXPECT_THROW(parse_openai_request({{"prompt", {1, 2}}, {"stop", "x"}}, OpenAiEndpoint::Completions, t), FieldError);
}

TEST(OpenAiRequest, ErrorShapeIsOpenAis) {
  json j = openai_error_json({Code::NotFound, "The model `x` does not exist.", "model"});
  EXPECT_EQ(j["error"]["message"], "The model `x` does not exist.");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  j = openai_error_json({Code::BadRequest, "bad", ""});
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"].contains("code"));
}

GenerationOutcome outcome(std::string text, std::vector<TokenId> ids, std::string finish) {
  GenerationOutcome o;
  o.result.text = std::move(text);
  o.result.output_ids = std::move(ids);
  o.finish_reason = std::move(finish);
  o.prompt_tokens = 4;
  return o;
}

TEST(OpenAiResponse, CompletionAndChatObjects) {
  const GenerationOutcome o = outcome("hello", {10, 11, 12}, "length");
  OpenAiResponder c(OpenAiEndpoint::Completions, "llama", 4);
  json j = c.full(o);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "llama");
  EXPECT_GT(j["created"].get<int64_t>(), 1700000000);
  EXPECT_EQ(j["choices"][0]["text"], "hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 4}, {"completion_tokens", 3}, {"total_tokens", 7}}));

  OpenAiResponder ch(OpenAiEndpoint::ChatCompletions, "llama", 4);
  j = ch.full(o);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(ch.role_chunk()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(ch.role_chunk()["object"], "chat.completion.chunk");
  EXPECT_EQ(ch.text_chunk("he")["choices"][0]["delta"]["content"], "he");
  EXPECT_TRUE(ch.text_chunk("he")["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(ch.finish_chunk(o)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ch.usage_chunk(o)["choices"], json::array());
  EXPECT_EQ(ch.usage_chunk(o)["usage"]["total_tokens"], 7);
  EXPECT_EQ(ch.id(), ch.text_chunk("x")["id"]);
}

// A token's event, built from the chunk's text around its one varying field, is the bytes the
// JSON object's dump gives: quotes, escapes, non-ASCII, invalid UTF-8, the marker's own byte, and
// a model name that holds it.
TEST(OpenAiResponder, ATokensEventIsTheChunksDump) {
  for (OpenAiEndpoint endpoint : {OpenAiEndpoint::Completions, OpenAiEndpoint::ChatCompletions})
    for (const std::string& model : {std::string("llama"), std::string("a\x01\"b")}) {
      const OpenAiResponder r(endpoint, model, 4);
      for (const std::string& text : {std::string("he"), std::string(" \"q\\\n\t"), std::string("\xc3\xa9 \xf0\x9f\x98\x80"),
                                     std::string("\xff\xfe"), std::string("\x01"), std::string()})
        EXPECT_EQ(r.text_chunk_event(text), sse_json_event(r.text_chunk(text))) << model << " " << text;
    }
}

TEST(TritonGenerate, FieldsAtTheTopOrInParameters) {
  TritonGenerateRequest r = parse_triton_generate(
      {{"text_input", "Once upon"},
       {"max_tokens", 8},
       {"stop_words", {"\n"}},
       {"random_seed", 7},
       {"parameters", {{"temperature", 0}, {"max_tokens", 99}, {"stop", "."}, {"ignore_eos", true}, {"class", "batch"}}}},
      target());
  EXPECT_EQ(r.text_input, "Once upon");
  EXPECT_EQ(r.generation.prompt, tokenizer().encode("Once upon", true));
  EXPECT_EQ(r.generation.options.max_new_tokens, 8);  // the top level's over parameters'
  EXPECT_FALSE(r.generation.options.sampling.do_sample);
  EXPECT_EQ(r.generation.options.sampling.seed, 7u);
  EXPECT_EQ(r.generation.options.stop, (std::vector<std::string>{".", "\n"}));
  EXPECT_TRUE(r.generation.options.ignore_eos);
  EXPECT_EQ(r.generation.cls, "batch");
  EXPECT_FALSE(r.include_input);
  r = parse_triton_generate({{"text_input", "Hi"}, {"parameters", {{"exclude_input_in_output", false}, {"seed", 3}}}}, target());
  EXPECT_TRUE(r.include_input);
  EXPECT_EQ(r.generation.options.sampling.seed, 3u);
}

TEST(TritonGenerate, Refusals) {
  auto param_of = [](const json& body) {
    try {
      parse_triton_generate(body, target());
    } catch (const FieldError& e) {
      return e.param;
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(param_of(json::object()), "text_input");
  EXPECT_EQ(param_of({{"text_input", 5}}), "text_input");
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"parameters", 5}}), "parameters");
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"max_tokens", "many"}}), "max_tokens");
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"beam_width", 2}}), "beam_width");
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"bad_words", "no"}}), "bad_words");
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"bad_words", ""}, {"stop_words", ""}}), "(accepted)");
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"max_tokens", 512}}), "max_tokens");
  // The vLLM backend's sampling parameters fusor does not implement: greedy text with a 200.
  for (const auto& [name, value] : std::vector<std::pair<std::string, json>>{
           {"n", 2}, {"best_of", 3}, {"presence_penalty", 0.5}, {"frequency_penalty", 0.5}, {"min_tokens", 4},
           {"logprobs", 2}, {"use_beam_search", true}, {"min_p", 0.1}, {"logit_bias", {{"5", 1}}},
           {"guided_json", {{"type", "object"}}}, {"include_stop_str_in_output", true}}) {
    EXPECT_EQ(param_of({{"text_input", "Hi"}, {name, value}}), name);
    EXPECT_EQ(param_of({{"text_input", "Hi"}, {"parameters", {{name, value}}}}), name);
  }
  EXPECT_EQ(param_of({{"text_input", "Hi"}, {"n", 1}, {"logprobs", 0}, {"presence_penalty", 0}}), "(accepted)");
  // random_seed is UINT64 in the model's config: seeds from 2^63 up were refused.
  const TritonGenerateRequest high = parse_triton_generate(
      {{"text_input", "Hi"}, {"temperature", 1.0}, {"random_seed", std::numeric_limits<uint64_t>::max()}}, target());
  EXPECT_EQ(high.generation.options.sampling.seed, std::numeric_limits<uint64_t>::max());
}

TEST(GenerationStream, CarriesPiecesAndTheOutcomeAcrossThreads) {
  auto stream = GenerationStream::create();
  GenerationEvents events = stream->events();
  EXPECT_FALSE(stream->next(std::chrono::milliseconds(1)).has_value());
  std::thread scheduler([events] {
    events.on_token(5, "Hel", false);
    events.on_token(6, "", false);
    events.on_token(7, "lo", false);
    events.on_done(outcome("Hello", {5, 6, 7}, "stop"));
  });
  std::string text;
  size_t pieces = 0;
  std::optional<GenerationOutcome> done;
  while (!done) {
    std::optional<GenerationStream::Update> u = stream->next(std::chrono::milliseconds(1000));
    if (!u) continue;
    for (const std::string& p : u->pieces) text += p;
    pieces += u->pieces.size();
    done = u->done;
  }
  scheduler.join();
  EXPECT_EQ(text, "Hello");
  EXPECT_EQ(pieces, 3u);
  EXPECT_EQ(done->finish_reason, "stop");
  EXPECT_TRUE(stream->finished());
  EXPECT_EQ(stream->wait_done().result.text, "Hello");
}

}  // namespace
}  // namespace fusor::serve
