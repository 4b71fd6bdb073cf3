// KServe v2 over gRPC (package inference, service GRPCInferenceService), with Triton's model
// config and statistics RPCs. Errors carry the gRPC status matching the HTTP code.
#pragma once
#include <memory>
#include <string>

#include "serve/server.h"

namespace grpc {
class Server;
}

namespace fusor::serve {

class GrpcService;

class GrpcServer {
 public:
  GrpcServer(Models& models, int64_t max_message_bytes);
  ~GrpcServer();
  void start(const std::string& host, int port);  // throws fusor::Error when it cannot bind
  void stop();  // stops accepting; waits for in-flight calls

 private:
  std::unique_ptr<GrpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  int64_t max_message_bytes_;
};

}  // namespace fusor::serve
