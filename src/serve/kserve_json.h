// The KServe v2 REST bodies: infer requests and responses (JSON, or JSON followed by binary
// tensor data per Triton's binary extension), and the metadata, model config and statistics
// documents in Triton's JSON schema.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "serve/served_model.h"

namespace fusor::serve {

struct HttpInferRequest {
  std::string id;
  std::string cls;  // parameters.class; "" for the default class
  Tensors inputs;
  // Requested outputs by name -> binary? Empty: every output, binary when binary_data_output.
  std::vector<std::pair<std::string, bool>> outputs;
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

nlohmann::json server_metadata();
nlohmann::json model_metadata(ServedModel& m);
nlohmann::json model_config(ServedModel& m);
nlohmann::json model_stats(ServedModel& m);
std::string error_body(const std::string& message);  // {"error":"..."}

inline constexpr const char* kServerVersion = "0.1.0";
inline constexpr const char* kModelVersion = "1";
// Extensions this server implements, as server metadata lists them.
inline const std::vector<std::string> kExtensions = {"binary_tensor_data", "parameters", "model_configuration",
                                                     "statistics"};

}  // namespace fusor::serve
