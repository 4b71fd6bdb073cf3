// OpenAI-compatible routes on the inference HTTP server, for the decoders it serves:
//   POST /v1/completions, POST /v1/chat/completions (stream: server-sent events ending in [DONE])
//   GET /v1/models, GET /v1/models/{model}
//   GET /health (200 while ready, 503 while draining)
// Errors answer in OpenAI's shape, {"error": {"message", "type", "param", "code"}}, and so do
// unknown paths under /v1/ (404) and other methods on these paths (405).
#pragma once
#include <cstdint>
#include <string>

#include "serve/server.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace fusor::serve {

void add_openai_routes(httplib::Server& server, Models& models, int64_t max_body_bytes);

// Whether a path no route took is OpenAI's (/v1/...), and its 404 in OpenAI's shape.
bool is_openai_path(const std::string& path);
void send_openai_not_found(const httplib::Request& req, httplib::Response& res);

}  // namespace fusor::serve
