// The server: the served models and the three listeners (KServe v2 over HTTP and gRPC, and
// Prometheus metrics over HTTP), started together and shut down gracefully: stop accepting,
// answer every accepted request, then return.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fusor/serve.h"
#include "serve/generative_model.h"
#include "serve/served_model.h"

namespace fusor::serve {

// How long shutdown waits for accepted work to finish before it cuts it off: open generation
// streams, then HTTP requests in flight (a client trickling its body would be waited for forever).
inline constexpr std::chrono::seconds kDrainLimit{30};

// The served models: encoders (and other tensor models) behind the KServe batcher, and decoders
// behind the generation scheduler. A name belongs to one of them.
class Models {
 public:
  explicit Models(std::vector<std::unique_ptr<ServedModel>> models,
                  std::vector<std::unique_ptr<GenerativeModel>> generative = {})
      : models_(std::move(models)), generative_(std::move(generative)) {}
  ServedModel* find(const std::string& name) const;  // nullptr when unknown
  std::vector<ServedModel*> all() const;
  GenerativeModel* find_generative(const std::string& name) const;  // nullptr when unknown
  std::vector<GenerativeModel*> generative() const;
  // Ready only between start_accepting() (every listener bound) and stop_accepting(): a client
  // that saw one listener's readiness may use the others at once.
  bool ready() const { return state_ == State::Serving; }
  bool stopping() const { return state_ == State::Stopping; }
  void start_accepting() { state_ = State::Serving; }
  void stop_accepting() { state_ = State::Stopping; }
  // The one-line reason a request is refused while not ready.
  const char* why_not_ready() const {
    return stopping() ? "the server is shutting down" : "the server is still starting";
  }

 private:
  std::vector<std::unique_ptr<ServedModel>> models_;
  std::vector<std::unique_ptr<GenerativeModel>> generative_;
  enum class State { Starting, Serving, Stopping };
  std::atomic<State> state_{State::Starting};
};

class HttpServer;
class GrpcServer;

class Server {
 public:
  Server(std::vector<std::unique_ptr<ServedModel>> models, std::vector<std::unique_ptr<GenerativeModel>> generative,
         Listen listen);
  ~Server();
  // Binds every listener and starts serving; throws fusor::Error when a port cannot be bound.
  void start();
  // Graceful shutdown; returns when every accepted request has been answered.
  void shutdown();

 private:
  Models models_;
  Listen listen_;
  std::unique_ptr<HttpServer> http_, metrics_;
  std::unique_ptr<GrpcServer> grpc_;
};

}  // namespace fusor::serve
