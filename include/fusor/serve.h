// Serving (docs/serve.md): KServe v2 / Triton-compatible inference over HTTP and gRPC, a dynamic
// batcher per traffic class (the `serve` section of the config), Prometheus metrics.
//
//   std::vector<fusor::serve::ModelToServe> models;
//   models.push_back({"minilm", fusor::Engine::load("model.onnx"), options});
//   auto server = fusor::serve::start_server(std::move(models), config.serve, 2, {});
//   ...
//   server.shutdown();  // stop accepting, answer every accepted request, then return
//
// Invariants:
// - Every request accepted before shutdown() is answered; after it, new ones are refused (503)
//   and readiness reads false.
// - Each model runs config.execution_contexts worker threads, each with its own sessions; a
//   session is built per (batch bucket, padded length) on first use, so the set of plans stays
//   bounded. The session options given here (the precision verdict already applied) are the
//   plans' options; serve.matrix may change the fusion switches per batch bucket.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/engine.h"

namespace fusor::serve {

// Where the server listens. max_body_bytes is the largest request body accepted.
struct Listen {
  std::string host = "127.0.0.1";
  int http_port = 8000, grpc_port = 8001, metrics_port = 8002;  // 0: that listener is off
  int64_t max_body_bytes = 64 << 20;
};

// One model to serve: its name in the URLs (/v2/models/NAME, and "model" in /v1 requests), its
// engine, the options of its plans, and the .onnx file it came from ("" for one built in
// memory). A decoder export (past keys and values among its inputs; configs and tokenizer in the
// file's folder) is served by generation: OpenAI-compatible /v1 completions and Triton's
// generate, with continuous batching per traffic class (docs/serve-generate.md).
struct ModelToServe {
  std::string name;
  Engine engine;
  SessionOptions session;
  std::string path;
  // serve.matrix's fusion configs, in its order, with this model's precision verdicts applied
  // (each entry's switches are gated as the top-level ones are); empty: config.matrix's as written.
  std::vector<FusionConfig> matrix_fusion;
};

class Server;

// A server started by start_server; destroying it shuts it down as shutdown() does.
class RunningServer {
 public:
  explicit RunningServer(std::unique_ptr<Server> server);
  RunningServer(RunningServer&&) noexcept;
  RunningServer& operator=(RunningServer&&) noexcept;
  ~RunningServer();
  // Graceful shutdown; returns when every accepted request has been answered.
  void shutdown();

 private:
  std::unique_ptr<Server> server_;
};

// Throws fusor::Error naming the first name HTTP could not route to one model: empty, "." or
// "..", with a '/' or a control character, "stats" (GET /v2/models/stats is every model's
// statistics), or a name given twice (decoders and encoders share the URLs). start_server checks
// it; `fusor serve` also checks before it loads anything.
void check_model_names(const std::vector<std::string>& names);

// Loads nothing: serves the given engines, each with `config.execution_contexts` contexts of
// `threads_per_context` threads; listen.max_body_bytes is taken from config.max_body_bytes.
// Throws fusor::Error when a port cannot be bound or a name is refused (check_model_names).
RunningServer start_server(std::vector<ModelToServe> models, const ServeConfig& config, int threads_per_context,
                           Listen listen);

// The model `fusor serve` runs with no --model (named kDemoModelName), so the server works out of the box: a tiny
// text-shaped model (input_ids and attention_mask, int64 [batch, sequence]) that looks each id up
// in a 32 x 4 table and zeroes masked positions, giving "embeddings" float [batch, sequence, 4].
// Ids must be in [0, 32).
inline constexpr const char* kDemoModelName = "demo";
Engine load_demo_model();

}  // namespace fusor::serve
