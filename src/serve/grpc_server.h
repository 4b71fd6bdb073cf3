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

// The most threads the gRPC server may hold. Its sync server runs each call on a thread of its own
// (a waiting unary call blocks on its batch, a stream holds one for its life), and created one per
// concurrent call: 20000 waiting calls made thousands of threads, cut throughput tenfold and kept
// their memory. Past the bound gRPC refuses a call at once with RESOURCE_EXHAUSTED. 512 waiting
// calls keep every batch full; a client with more in flight sends them on a stream
// (ModelStreamInfer), which holds one thread for all of them.
inline constexpr int kGrpcMaxThreads = 512;

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
