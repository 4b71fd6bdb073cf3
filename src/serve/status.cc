#include "serve/status.h"

namespace fusor::serve {

int http_status(Code c) {
  switch (c) {
    case Code::Ok: return 200;
    case Code::BadRequest: return 400;
    case Code::NotFound: return 404;
    case Code::Unavailable: return 503;
    case Code::Unsupported: return 501;
    case Code::Internal: return 500;
    case Code::Cancelled: return 499;  // nginx's "client closed request": no client reads it
  }
  return 500;
}

int grpc_status(Code c) {
  switch (c) {  // grpc::StatusCode numbering
    case Code::Ok: return 0;
    case Code::BadRequest: return 3;    // INVALID_ARGUMENT
    case Code::NotFound: return 5;      // NOT_FOUND
    case Code::Unavailable: return 14;  // UNAVAILABLE
    case Code::Unsupported: return 12;  // UNIMPLEMENTED
    case Code::Internal: return 13;     // INTERNAL
    case Code::Cancelled: return 1;     // CANCELLED
  }
  return 13;
}

Code code_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument: return Code::BadRequest;
    case ErrorKind::UnsupportedOp: return Code::Unsupported;
    case ErrorKind::InvalidModel: return Code::Internal;
    case ErrorKind::Runtime: return Code::Internal;
  }
  return Code::Internal;
}

const char* code_name(Code c) {
  switch (c) {
    case Code::Ok: return "ok";
    case Code::BadRequest: return "bad_request";
    case Code::NotFound: return "not_found";
    case Code::Unavailable: return "unavailable";
    case Code::Unsupported: return "unsupported";
    case Code::Internal: return "internal";
    case Code::Cancelled: return "cancelled";
  }
  return "?";
}

}  // namespace fusor::serve
