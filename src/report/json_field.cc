#include "report/json_field.h"

#include <cmath>

#include "fusor/error.h"

namespace fusor::report {

void JsonField::fail(const std::string& what) const {
  throw Error(source_ + ": " + (path_.empty() ? std::string("the document") : path_) + " " + what);
}

bool JsonField::has(const std::string& key) const {
  return j_->is_object() && j_->contains(key) && !j_->at(key).is_null();
}

JsonField JsonField::at(const std::string& key) const {
  if (!j_->is_object()) fail("must be an object");
  if (!has(key)) JsonField(*j_, child_path(key), source_).fail("is missing");
  return JsonField(j_->at(key), child_path(key), source_);
}

JsonField JsonField::object(const std::string& key) const {
  JsonField f = at(key);
  if (!f.raw().is_object()) f.fail("must be an object");
  return f;
}

std::vector<JsonField> JsonField::list(const std::string& key) const {
  JsonField f = at(key);
  if (!f.raw().is_array()) f.fail("must be a list");
  std::vector<JsonField> out;
  for (size_t i = 0; i < f.raw().size(); ++i) out.emplace_back(f.raw()[i], f.path() + "[" + std::to_string(i) + "]", source_);
  return out;
}

double JsonField::number(const std::string& key) const {
  JsonField f = at(key);
  if (!f.raw().is_number()) f.fail("must be a number");
  const double x = f.raw().get<double>();
  if (!std::isfinite(x)) f.fail("must be finite");
  return x;
}

double JsonField::number_or(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

std::string JsonField::text(const std::string& key) const {
  JsonField f = at(key);
  if (!f.raw().is_string()) f.fail("must be text");
  return f.raw().get<std::string>();
}

std::string JsonField::text_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

bool JsonField::flag_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  JsonField f = at(key);
  if (!f.raw().is_boolean()) f.fail("must be true or false");
  return f.raw().get<bool>();
}

}  // namespace fusor::report
