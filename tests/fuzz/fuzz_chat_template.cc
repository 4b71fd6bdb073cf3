// libFuzzer target: arbitrary bytes as a chat template. When they parse, the template renders a
// few message lists with and without a generation prompt. Any exception other than fusor::Error,
// any crash, hang or sanitizer report is a bug: a model's template is untrusted input.
//   cmake --build build-asan --target fuzz_chat_template && build-asan/tests/fuzz/fuzz_chat_template -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fusor/chat_template.h"
#include "fusor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::vector<fusor::ChatMessage>> kChats = {
      {},
      {{"user", "Hello"}},
      {{"system", "Be brief."}, {"user", " é 😀 "}, {"assistant", "{{ x }}"}, {"user", "\n"}},
  };
  try {
    fusor::ChatTemplate t = fusor::ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size))
                                .with_token("bos_token", "<s>")
                                .with_token("eos_token", "</s>");
    for (const auto& chat : kChats) {
      for (bool generation : {false, true}) {
        try {
          t.apply(chat, generation);
        } catch (const fusor::Error&) {
        }
      }
    }
  } catch (const fusor::Error&) {
  }
  return 0;
}
