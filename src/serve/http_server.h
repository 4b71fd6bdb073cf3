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
  void stop();                                    // stops accepting; in-flight handlers finish, idle connections close

 private:
  void inference_routes();
  void metrics_routes();

  Models& models_;
  const int64_t max_body_bytes_;  // serve.max_body_bytes: as sent, and once inflated
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int listen_socket_ = -1;  // the listening socket, once bound
  int port_ = -1;           // its port
  std::atomic<int> requests_in_flight_ = 0;  // read, being answered, or their answer being written
  std::atomic<bool> loop_ended_ = false;  // listen_after_bind returned
};

}  // namespace fusor::serve
