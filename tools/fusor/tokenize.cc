// fusor tokenize (hidden): encode and decode with a tokenizer.json, for tests and debugging.
// --file runs many requests in one process: each line is a JSON string (encoded: {"ids": [...]})
// or a JSON array of ids (decoded: {"text": "...", "pieces": [...]}, where pieces are what the
// streaming decoder returned id by id, then its final flush).
// --chat renders chat messages to a prompt with a chat template (include/fusor/chat_template.h):
// the file is {"messages": [{"role", "content"}...], "add_generation_prompt": bool, and optionally
// "template" (else the tokenizer folder's, else the plain one) with "bos_token", "eos_token", ...}.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "fusor/chat_template.h"
#include "fusor/error.h"
#include "fusor/tokenizer.h"

namespace fusor::cli {
namespace {

struct TokenizeArgs {
  std::string tokenizer, text, file, chat;
  std::vector<TokenId> decode;
  bool has_text = false, json = false, no_special = false, skip_special = false;
};

nlohmann::json decoded(const Tokenizer& t, const std::vector<TokenId>& ids, bool skip_special) {
  nlohmann::json pieces = nlohmann::json::array();
  Tokenizer::StreamDecoder stream = t.stream_decoder(skip_special);
  for (TokenId id : ids) pieces.push_back(stream.push(id));
  pieces.push_back(stream.finish());
  return {{"text", t.decode(ids, skip_special)}, {"pieces", pieces}};
}

void run_file(const Tokenizer& t, const TokenizeArgs& a) {
  std::ifstream in(a.file);
  if (!in) throw Error("cannot read " + a.file, ErrorKind::InvalidArgument);
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json request = nlohmann::json::parse(line, nullptr, false);
    std::string where = a.file + ":" + std::to_string(n) + ": ";
    try {
      if (request.is_string()) {
        std::cout << nlohmann::json{{"ids", t.encode(request.get<std::string>(), !a.no_special)}}.dump() << "\n";
      } else if (request.is_array() && std::all_of(request.begin(), request.end(), [](const auto& v) {
                   return v.is_number_integer() && v.template get<int64_t>() >= INT32_MIN &&
                          v.template get<int64_t>() <= INT32_MAX;
                 })) {
        std::cout << decoded(t, request.get<std::vector<TokenId>>(), a.skip_special).dump() << "\n";
      } else {
        throw Error("expected a JSON string to encode or an array of token ids to decode", ErrorKind::InvalidArgument);
      }
    } catch (const Error& e) {
      throw Error(where + e.what(), e.kind());
    }
  }
}

[[noreturn]] void bad_chat(const std::string& file, const std::string& what) {
  throw Error(file + ": " + what, ErrorKind::InvalidArgument);
}

void run_chat(const TokenizeArgs& a) {
  std::ifstream in(a.chat);
  if (!in) throw Error("cannot read " + a.chat, ErrorKind::InvalidArgument);
  nlohmann::json request = nlohmann::json::parse(in, nullptr, false);
  if (!request.is_object()) bad_chat(a.chat, "expected a JSON object with \"messages\"");
  std::vector<ChatMessage> messages;
  const nlohmann::json& list = request.value("messages", nlohmann::json());
  if (!list.is_array()) bad_chat(a.chat, "\"messages\" must be a list");
  for (const auto& m : list) {
    if (!m.is_object() || !m.value("role", nlohmann::json()).is_string() || !m.value("content", nlohmann::json()).is_string())
      bad_chat(a.chat, "each message must be {\"role\": str, \"content\": str}");
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), ""});
  }
  const nlohmann::json& generation = request.value("add_generation_prompt", nlohmann::json(false));
  if (!generation.is_boolean()) bad_chat(a.chat, "\"add_generation_prompt\" must be true or false");
  auto chosen = [&]() {
    if (!request.contains("template")) return a.tokenizer.empty() ? ChatTemplate::plain() : ChatTemplate::for_model(a.tokenizer);
    if (!request["template"].is_string()) bad_chat(a.chat, "\"template\" must be a string");
    ChatTemplate t = ChatTemplate::parse(request["template"].get<std::string>());
    for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"})
      if (request.contains(name) && request[name].is_string()) t = t.with_token(name, request[name].get<std::string>());
    return t;
  };
  ChatTemplate t = chosen();
  std::string prompt = t.apply(messages, generation.get<bool>());
  if (a.json) std::cout << nlohmann::json{{"prompt", prompt}, {"plain", t.is_plain()}}.dump() << "\n";
  else std::cout << prompt << "\n";
}

void tokenize(const TokenizeArgs& a) {
  if (!a.chat.empty()) return run_chat(a);
  if (a.tokenizer.empty()) throw Error("tokenize: a tokenizer.json or its folder is needed", ErrorKind::InvalidArgument);
  Tokenizer t = Tokenizer::load(a.tokenizer);
  if (!a.file.empty()) return run_file(t, a);
  if (a.has_text) {
    std::vector<TokenId> ids = t.encode(a.text, !a.no_special);
    if (a.json) {
      std::cout << nlohmann::json{{"ids", ids}}.dump() << "\n";
    } else {
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
    }
  }
  if (!a.decode.empty()) {
    if (a.json) std::cout << decoded(t, a.decode, a.skip_special).dump() << "\n";
    else std::cout << t.decode(a.decode, a.skip_special) << "\n";
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Encode text to token ids, or decode ids, with a tokenizer.json");
  cmd->group("");  // hidden: a test and debugging aid, not a documented workflow yet
  cmd->add_option("tokenizer,--tokenizer", args->tokenizer, "tokenizer.json or a folder holding one")
      ->type_name("PATH");
  auto set_text = [args](const std::string& t) { args->text = t, args->has_text = true; };
  cmd->add_option_function<std::string>("--text", set_text, "Text to encode; prints its ids");
  cmd->add_option("--decode", args->decode, "Comma-separated ids to decode; prints the text")->delimiter(',');
  cmd->add_option("--file", args->file, "One JSON string (encode) or array of ids (decode) per line; JSON lines out")
      ->type_name("FILE");
  cmd->add_option("--chat", args->chat, "Render a chat request (messages, add_generation_prompt, template) to a prompt")
      ->type_name("FILE");
  cmd->add_flag("--json", args->json, "Print JSON ({\"ids\"}, or {\"text\", \"pieces\"} with the streamed pieces)");
  cmd->add_flag("--no-special", args->no_special, "Encode without the post-processor's special tokens (e.g. BOS)");
  cmd->add_flag("--skip-special", args->skip_special, "Decode without special tokens");
  cmd->callback([args] { tokenize(*args); });
}

}  // namespace fusor::cli
