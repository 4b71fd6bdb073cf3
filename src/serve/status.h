// The outcome of a served request, and how each protocol spells it: Triton's HTTP codes and
// the matching gRPC status codes.
#pragma once
#include <string>

#include "fusor/error.h"

namespace fusor::serve {

enum class Code {
  Ok,
  BadRequest,   // malformed body, wrong input name, dtype or shape        400 / INVALID_ARGUMENT
  NotFound,     // unknown model                                          404 / NOT_FOUND
  Unavailable,  // queue full, timed out, or shutting down                503 / UNAVAILABLE
  Unsupported,  // a feature fusor does not serve (e.g. shared memory)   501 / UNIMPLEMENTED
  Internal,     // the model failed to run                                500 / INTERNAL
  Cancelled,    // the client left before its request ran                 499 / CANCELLED
};

struct Status {
  Code code = Code::Ok;
  std::string message;

  bool ok() const { return code == Code::Ok; }
};

// A request dropped unrun because its client left (the batcher, infer_sync).
inline Status client_cancelled() { return {Code::Cancelled, "the client cancelled the request"}; }

int http_status(Code c);
int grpc_status(Code c);  // grpc::StatusCode values, kept as int so this header needs no gRPC
const char* code_name(Code c);
// How a fusor::Error answers a request: the caller's fault (InvalidArgument) is a bad request,
// what fusor lacks (UnsupportedOp) unsupported, anything else internal.
Code code_of(ErrorKind kind);

// Thrown by request parsing and checks; the server turns it into an error response.
struct RequestError {
  Code code;
  std::string message;
};

}  // namespace fusor::serve
