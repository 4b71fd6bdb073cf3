// Triton's generate extension on the KServe side, for the decoders the server holds:
//   POST /v2/models/{name}[/versions/1]/generate         one JSON answer
//   POST /v2/models/{name}[/versions/1]/generate_stream  server-sent events, one per token
// with the field names Triton's LLM backends (TensorRT-LLM, vLLM) use: "text_input" and the
// sampling fields at the top level or nested in "parameters"; the answer is
// {"model_name", "model_version", "text_output"} (docs/serve-generate.md). Errors are Triton's
// {"error": "..."}; one after a stream started comes as an event of that shape.
#pragma once
#include <cstdint>
#include "serve/server.h"
#include "serve/triton_generate_request.h"

namespace httplib {
class Server;
}

namespace fusor::serve {

void add_triton_generate_routes(httplib::Server& server, Models& models, int64_t max_body_bytes);

}  // namespace fusor::serve
