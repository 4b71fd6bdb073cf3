// The tuned record's one field list: to JSON, and back from JSON (or from YAML through
// yaml_to_json, whose scalars stay text; the reader converts them by the field's type).
#pragma once
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "fusor/tuned_record.h"

namespace fusor::tune {

nlohmann::json tuned_record_json(const TunedRecord& record);
// Throws fusor::Error "SOURCE: tuned.FIELD: ..." naming the first missing or mistyped field.
TunedRecord tuned_record_from_json(const nlohmann::json& j, const std::string& source_name);
nlohmann::json yaml_to_json(const YAML::Node& node);

}  // namespace fusor::tune
