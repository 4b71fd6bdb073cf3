// The KServe v2 REST bodies: infer requests and responses (json_infer.h), and the metadata,
// model config and statistics documents in Triton's JSON schema.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/json_infer.h"
#include "serve/generative_model.h"
#include "serve/served_model.h"

namespace fusor::serve {

nlohmann::json server_metadata();
nlohmann::json model_metadata(ServedModel& m);
nlohmann::json model_config(ServedModel& m);
nlohmann::json model_stats(ServedModel& m);

// A decoder's KServe face: the tensors of Triton's LLM backends (vLLM's and TensorRT-LLM's names),
// one request per call (max_batch_size 0), decoupled (a response per token on ModelStreamInfer).
struct GenerateTensor {
  const char* name;
  const char* datatype;
  int64_t dims;  // 1, or -1 for a list
  bool optional;
};
const std::vector<GenerateTensor>& generate_inputs();
const std::vector<GenerateTensor>& generate_outputs();
nlohmann::json generative_metadata(const GenerativeModel& m);
nlohmann::json generative_config(const GenerativeModel& m);
nlohmann::json generative_stats(GenerativeModel& m);
std::string error_body(const std::string& message);  // {"error":"..."}

inline constexpr const char* kServerVersion = "0.1.0";
// Extensions this server implements, as server metadata lists them.
inline const std::vector<std::string> kExtensions = {"classification", "binary_tensor_data", "parameters",
                                                     "model_configuration", "statistics", "generate"};

}  // namespace fusor::serve
