// The KServe v2 REST bodies: infer requests and responses (json_infer.h), and the metadata,
// model config and statistics documents in Triton's JSON schema.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/json_infer.h"
#include "serve/served_model.h"

namespace fusor::serve {

nlohmann::json server_metadata();
nlohmann::json model_metadata(ServedModel& m);
nlohmann::json model_config(ServedModel& m);
nlohmann::json model_stats(ServedModel& m);
std::string error_body(const std::string& message);  // {"error":"..."}

inline constexpr const char* kServerVersion = "0.1.0";
// Extensions this server implements, as server metadata lists them.
inline const std::vector<std::string> kExtensions = {"classification", "binary_tensor_data", "parameters",
                                                     "model_configuration", "statistics", "generate"};

}  // namespace fusor::serve
