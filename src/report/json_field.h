// Typed, path-aware reads of a JSON document for the onboard report: a missing or mistyped field
// throws fusor::Error with one line naming it ("SOURCE: profile.after.kernels[2].time_ms must be
// a number"), so odd input never reaches the renderer as a nlohmann exception or a crash.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fusor::report {

class JsonField {
 public:
  JsonField(const nlohmann::json& j, std::string path, std::string source)
      : j_(&j), path_(std::move(path)), source_(std::move(source)) {}

  bool has(const std::string& key) const;  // present and not null
  JsonField at(const std::string& key) const;  // must be present and not null
  JsonField object(const std::string& key) const;  // must be an object
  std::vector<JsonField> list(const std::string& key) const;  // must be an array
  double number(const std::string& key) const;  // must be a finite number
  double number_or(const std::string& key, double fallback) const;
  std::string text(const std::string& key) const;  // must be a string
  std::string text_or(const std::string& key, const std::string& fallback) const;
  bool flag_or(const std::string& key, bool fallback) const;

  const nlohmann::json& raw() const { return *j_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& what) const;  // "SOURCE: PATH what"

 private:
  std::string child_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const nlohmann::json* j_;
  std::string path_, source_;
};

}  // namespace fusor::report
