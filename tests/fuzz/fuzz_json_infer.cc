// libFuzzer target: arbitrary bytes as a KServe v2 REST infer body into the request decoder and,
// when they decode, every decoded input back out through the response encoder. The first byte
// picks the framing: below 128 a JSON-only body; otherwise that many bytes (less 128) at the end
// are binary data after an Inference-Header-Content-Length header. Any exception other than
// RequestError, and any crash or sanitizer report, is a bug.
//   cmake --build build-asan --target fuzz_json_infer && build-asan/tests/fuzz/fuzz_json_infer -max_total_time=60
#include <cstddef>
#include <cstdint>
#include <string>

#include "serve/json_infer.h"

using namespace fusor::serve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::optional<size_t> header_length;
  if (data[0] >= 128) header_length = body.size() - std::min<size_t>(body.size(), data[0] - 128);
  try {
    HttpInferRequest r = parse_infer_request(body, header_length);
    // Echo the inputs as outputs: binary for odd sizes, and every third one as top classes.
    for (const auto& [name, t] : r.inputs) r.outputs.push_back({name, t.numel() % 2 == 1, t.numel() % 3 == 0 ? 2 : 0});
    infer_response("m", r, Signature{}, r.inputs);
  } catch (const RequestError&) {
  }
  return 0;
}
