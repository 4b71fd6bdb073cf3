// Streams one generation as server-sent events (`data: ...\n\n`) over cpp-httplib's chunked
// responses, for both OpenAI's stream and Triton's generate_stream. The protocol says how each
// event reads; this file says when they are written, and cancels the request when the client
// goes away (a failed write, or a closed socket noticed while waiting) so its KV blocks free at once.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/generation_stream.h"
#include "serve/generative_model.h"

namespace httplib {
struct Response;
}

namespace fusor::serve {

struct SseFormat {
  std::function<std::vector<std::string>()> start;                 // before the first token; may be empty
  std::function<std::string(std::string_view piece)> piece;       // one token's text; "" writes nothing
  std::function<std::vector<std::string>(const GenerationOutcome&)> end;  // the last events
};

// Answers `res` with the events of request `id` (already submitted with `stream`'s events).
void stream_sse(httplib::Response& res, GenerativeModel& model, uint64_t id, std::shared_ptr<GenerationStream> stream,
                SseFormat format);

// `data: <payload>\n\n`.
std::string sse_event(std::string_view payload);

}  // namespace fusor::serve
