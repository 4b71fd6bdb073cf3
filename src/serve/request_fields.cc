#include "serve/request_fields.h"

#include <cmath>
#include <string>

#include "io/json_depth.h"

namespace fusor::serve {

nlohmann::json parse_json_object(const std::string& body) {
  if (!json_depth_within(body))
    throw FieldError{Code::BadRequest, "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", ""};
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) throw FieldError{Code::BadRequest, "the request body is not valid JSON", ""};
  if (!j.is_object()) throw FieldError{Code::BadRequest, "the request body must be a JSON object", ""};
  return j;
}

bool RequestFields::has(const std::string& name) const { return get(name) != nullptr; }

const nlohmann::json* RequestFields::get(const std::string& name) const {
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void RequestFields::wrong_type(const std::string& name, const char* expected) const {
  std::string got = get(name)->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (got.size() > 40) got = got.substr(0, 37) + "...";
  throw FieldError{Code::BadRequest, "'" + name + "' must be " + expected + ", not " + got, name};
}

std::optional<uint64_t> RequestFields::seed(const std::string& name) const {
  const nlohmann::json* v = get(name);
  if (v && v->is_number_unsigned()) return v->get<uint64_t>();
  if (std::optional<int64_t> i = integer(name)) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

std::optional<int64_t> RequestFields::integer(const std::string& name) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) wrong_type(name, "an integer in range");
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 16.0 is an integer to JSON's eye (Python clients send floats at times); 16.5 is not.
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  wrong_type(name, "an integer");
}

std::optional<double> RequestFields::number(const std::string& name) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) wrong_type(name, "a number");
  return v->get<double>();
}

std::optional<bool> RequestFields::boolean(const std::string& name) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "true or false");
  return v->get<bool>();
}

std::optional<std::string> RequestFields::string(const std::string& name) const {
  const nlohmann::json* v = get(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string");
  return v->get<std::string>();
}

std::vector<std::string> RequestFields::strings(const std::string& name) const {
  const nlohmann::json* v = get(name);
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) wrong_type(name, "a string or a list of strings");
  std::vector<std::string> out;
  for (const nlohmann::json& s : *v) {
    if (!s.is_string()) wrong_type(name, "a string or a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace fusor::serve
