// libFuzzer target: arbitrary bytes as the body of a generation request, read as OpenAI's POST
// /v1/completions and /v1/chat/completions and as Triton's generate, against a model with a
// small tokenizer, a chat template and a 64-token context. Any exception other than FieldError
// (the routes' 400 / 404), any crash or sanitizer report is a bug: a body that reaches the
// server's generic handler gets a 500, not the clear 400 that names the field.
//   cmake --build build-asan --target fuzz_generation_request && build-asan/tests/fuzz/fuzz_generation_request -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fusor/chat_template.h"
#include "fusor/tokenizer.h"
#include "serve/openai_request.h"
#include "serve/triton_generate_request.h"

using namespace fusor;
using namespace fusor::serve;

namespace {

// A byte-level BPE of a few tokens with one special token, enough for text prompts and chat
// messages to encode (most bytes become unknown pieces, which the reader must refuse cleanly).
constexpr std::string_view kTokenizer = R"({
  "added_tokens": [{"id": 5, "content": "<s>", "special": true, "lstrip": false, "normalized": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4}, "merges": ["a b", "Ġ ab"]}
})";

// Roles and contents in turn, then the assistant's turn when asked for.
constexpr std::string_view kTemplate =
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizer tokenizer = Tokenizer::from_json(kTokenizer);
  static const ChatTemplate chat = ChatTemplate::parse(kTemplate);
  static const GenerationTarget model{.name = "m", .tokenizer = &tokenizer, .chat_template = &chat,
                                      .context_length = 64, .vocab_size = 6};
  const nlohmann::json body =
      nlohmann::json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size, nullptr,
                            /*allow_exceptions=*/false);
  if (!body.is_object()) return 0;  // the routes refuse these before reading any field
  for (OpenAiEndpoint endpoint : {OpenAiEndpoint::Completions, OpenAiEndpoint::ChatCompletions}) {
    try {
      requested_model(body);
      parse_openai_request(body, endpoint, model);
    } catch (const FieldError&) {
    }
  }
  try {
    parse_triton_generate(body, model);
  } catch (const FieldError&) {
  }
  return 0;
}
