// KServe v2 REST on cpp-httplib, and the metrics endpoint. Handlers answer every error as a
// one-line {"error": "..."} with Triton's HTTP status; a body over the limit is refused before
// it is read in full.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "serve/server.h"

namespace httplib {
class Server;
}

namespace fusor::serve {

class HttpServer {
 public:
  enum class Kind { Inference, Metrics };
  HttpServer(Kind kind, Models& models, int64_t max_body_bytes);
  ~HttpServer();
  void start(const std::string& host, int port);  // binds, then serves on its own thread
  void stop();                                    // stops accepting; in-flight handlers finish

 private:
  void inference_routes();
  void metrics_routes();

  Models& models_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int listen_socket_ = -1;  // the listening socket, once bound
  std::atomic<bool> loop_ended_ = false;  // listen_after_bind returned
};

}  // namespace fusor::serve
