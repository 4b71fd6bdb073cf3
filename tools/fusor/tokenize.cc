// fusor tokenize (hidden): encode and decode with a tokenizer.json, for tests and debugging.
// --file runs many requests in one process: each line is a JSON string (encoded: {"ids": [...]})
// or a JSON array of ids (decoded: {"text": "...", "pieces": [...]}, where pieces are what the
// streaming decoder returned id by id, then its final flush).
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "fusor/error.h"
#include "fusor/tokenizer.h"

namespace fusor::cli {
namespace {

struct TokenizeArgs {
  std::string tokenizer, text, file;
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

void tokenize(const TokenizeArgs& a) {
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
  cmd->add_option("tokenizer", args->tokenizer, "tokenizer.json or a folder holding one")
      ->required()
      ->type_name("PATH");
  auto set_text = [args](const std::string& t) { args->text = t, args->has_text = true; };
  cmd->add_option_function<std::string>("--text", set_text, "Text to encode; prints its ids");
  cmd->add_option("--decode", args->decode, "Comma-separated ids to decode; prints the text")->delimiter(',');
  cmd->add_option("--file", args->file, "One JSON string (encode) or array of ids (decode) per line; JSON lines out")
      ->type_name("FILE");
  cmd->add_flag("--json", args->json, "Print JSON ({\"ids\"}, or {\"text\", \"pieces\"} with the streamed pieces)");
  cmd->add_flag("--no-special", args->no_special, "Encode without the post-processor's special tokens (e.g. BOS)");
  cmd->add_flag("--skip-special", args->skip_special, "Decode without special tokens");
  cmd->callback([args] { tokenize(*args); });
}

}  // namespace fusor::cli
