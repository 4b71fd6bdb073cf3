// Typed reading of a JSON request body's fields, for the generation protocols (OpenAI-compatible
// /v1 and Triton's generate): null counts as absent, a wrong type or range is a FieldError that
// names the field, and unknown fields are left alone (as OpenAI's servers do).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/status.h"

namespace fusor::serve {

// A refused request: the status, a one-line message, and the field at fault ("" when none).
struct FieldError {
  Code code = Code::BadRequest;
  std::string message;
  std::string param;
  std::string kind = "";  // OpenAI's error.code where it names one ("context_length_exceeded")
};

// Parses a request body that must be a JSON object; FieldError otherwise.
nlohmann::json parse_json_object(const std::string& body);

class RequestFields {
 public:
  explicit RequestFields(const nlohmann::json& object) : object_(object) {}
  bool has(const std::string& name) const;  // present and not null
  const nlohmann::json* get(const std::string& name) const;  // nullptr when absent or null
  std::optional<int64_t> integer(const std::string& name) const;
  // A sampling seed: any integer of 64 bits, signed (OpenAI's) or unsigned (Triton declares
  // random_seed UINT64: seeds from 2^63 up were refused), as the generator's 64 bits.
  std::optional<uint64_t> seed(const std::string& name) const;
  std::optional<double> number(const std::string& name) const;  // finite
  std::optional<bool> boolean(const std::string& name) const;
  std::optional<std::string> string(const std::string& name) const;
  // A string or a list of strings (stop strings); empty when absent.
  std::vector<std::string> strings(const std::string& name) const;

 private:
  [[noreturn]] void wrong_type(const std::string& name, const char* expected) const;
  const nlohmann::json& object_;
};

}  // namespace fusor::serve
