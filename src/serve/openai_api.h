// OpenAI-compatible routes on the inference HTTP server, for the decoders it serves:
//   POST /v1/completions, POST /v1/chat/completions (stream: server-sent events ending in [DONE])
//   GET /v1/models, GET /v1/models/{model}
//   GET /health (200 while ready, 503 while draining)
// Errors answer in OpenAI's shape, {"error": {"message", "type", "param", "code"}}.
#pragma once
#include <cstdint>
#include "serve/server.h"

namespace httplib {
class Server;
}

namespace fusor::serve {

void add_openai_routes(httplib::Server& server, Models& models, int64_t max_body_bytes);

}  // namespace fusor::serve
