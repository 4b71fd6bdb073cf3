// Answers one generation over cpp-httplib's chunked responses, for OpenAI's and Triton's
// routes: streamed as server-sent events (`data: ...\n\n`), or whole as one body once it is
// done. The protocol says how each event or body reads; this file says when they are written,
// and cancels the request when the client goes away (a failed write, or a closed socket noticed
// while waiting) so its KV blocks free at once.
#pragma once
#include <nlohmann/json.hpp>
#include <functional>
#include <memory>
#include <optional>
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

// Answers `res` with the events of request `id` (already submitted with `stream`'s events). As
// answer_when_done, it waits for the first token: a failed outcome before it (a full queue, a
// queue timeout) is returned for the caller to answer with its status, not as an event of a 200.
std::optional<GenerationOutcome> stream_sse(httplib::Response& res, GenerativeModel& model, uint64_t id,
                                            std::shared_ptr<GenerationStream> stream, SseFormat format);

// A generation answered whole, for a client that may leave before it is done. The handler waits
// for the first token: an outcome that comes before it (a refusal, a queue timeout) is returned
// for the caller to answer with its own status. From the first token on, `res` is a chunked 200
// whose provider waits for the outcome while checking that the client is still there (cancelling
// the request when it is not) and then writes `body(outcome)`; after the first token only a
// model failure can end a request early, and `body` then writes the protocol's error object.
std::optional<GenerationOutcome> answer_when_done(httplib::Response& res, GenerativeModel& model, uint64_t id,
                                                  std::shared_ptr<GenerationStream> stream, const char* content_type,
                                                  std::function<std::string(const GenerationOutcome&)> body);

// `data: <payload>\n\n`.
std::string sse_event(std::string_view payload);
// The event of a JSON payload, non-ASCII written as \u escapes: the stream's type is a bare
// text/event-stream (see stream_sse), and clients such as Python's requests read a text/* body
// without a charset as Latin-1, so UTF-8 text arrived garbled. Invalid UTF-8 is replaced.
std::string sse_json_event(const nlohmann::json& payload);

}  // namespace fusor::serve
