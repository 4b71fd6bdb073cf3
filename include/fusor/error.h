// The one error type fusor throws. Messages are a single line that names what was wrong,
// so the CLI can print them as-is and exit non-zero. The kind says whose problem it is, so the
// server and the Python package map errors (HTTP status, exception class) without reading the
// message.
#pragma once
#include <stdexcept>
#include <string>

namespace fusor {

enum class ErrorKind {
  InvalidModel,     // the model file or bytes are not a valid ONNX model fusor can load
  InvalidArgument,  // the caller's inputs, dims, options or config are wrong for the model
  UnsupportedOp,    // a valid model needs what fusor does not implement: an op, an opset, a dtype
  Runtime,          // anything else that failed while preparing or running a model (the default)
};

// "invalid_model", "invalid_argument", "unsupported_op", "runtime".
inline const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidModel: return "invalid_model";
    case ErrorKind::InvalidArgument: return "invalid_argument";
    case ErrorKind::UnsupportedOp: return "unsupported_op";
    case ErrorKind::Runtime: return "runtime";
  }
  return "runtime";
}

class Error : public std::runtime_error {
 public:
  // Without a kind an error is Runtime: throw sites that know better say so.
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::Runtime)
      : std::runtime_error(message), kind_(kind) {}

  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace fusor
