// The KServe v2 REST infer bodies: requests and responses as JSON, or as a JSON header followed
// by binary tensor data (Triton's binary extension, Inference-Header-Content-Length bytes of JSON).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/signature.h"
#include "serve/status.h"

namespace fusor::serve {

struct HttpInferRequest {
  std::string id;
  std::string cls;  // parameters.class; "" for the default class
  Tensors inputs;
  // Requested outputs; empty: every output, binary when binary_data_output.
  struct Output {
    std::string name;
    bool binary = false;
    int64_t classes = 0;  // > 0: the classification extension's top classes (classification.h)
  };
  std::vector<Output> outputs;
  bool binary_default = false;
};

// `header_length`: the Inference-Header-Content-Length header, or nullopt for a JSON-only body.
// Throws RequestError (400) on anything malformed.
HttpInferRequest parse_infer_request(const std::string& body, std::optional<size_t> header_length);

struct HttpBody {
  std::string body;
  std::optional<size_t> header_length;  // set when binary data follows the JSON
};
HttpBody infer_response(const std::string& model, const HttpInferRequest& req, const Signature& sig,
                        const Tensors& outputs);

inline constexpr const char* kModelVersion = "1";  // the one version of each model served

}  // namespace fusor::serve
