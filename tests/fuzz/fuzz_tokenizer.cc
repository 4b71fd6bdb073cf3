// libFuzzer target: arbitrary bytes as a tokenizer.json. When they load, the file's own text is
// encoded (the fuzzer thus steers both the regexes and the text they run on), the ids decoded
// whole and streamed, and every id of the vocabulary decoded. Any exception other than
// fusor::Error, any crash or sanitizer report, and a stream that disagrees with decode() are bugs.
//   cmake --build build-asan --target fuzz_tokenizer && build-asan/tests/fuzz/fuzz_tokenizer -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fusor/error.h"
#include "fusor/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    fusor::Tokenizer t = fusor::Tokenizer::from_json(text, "fuzz.json");
    std::vector<fusor::TokenId> ids = t.encode(text, true);
    fusor::Tokenizer::StreamDecoder stream = t.stream_decoder(false);
    std::string streamed;
    for (fusor::TokenId id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    if (streamed != t.decode(ids, false)) std::abort();
    for (size_t id = 0; id < t.vocab_size(); ++id) {
      try {  // ids no token has are refused
        std::vector<fusor::TokenId> one{static_cast<fusor::TokenId>(id)};
        t.decode(one, true);
        t.token_to_id(t.id_to_token(one[0]));
      } catch (const fusor::Error&) {
      }
    }
  } catch (const fusor::Error&) {
  }
  return 0;
}
