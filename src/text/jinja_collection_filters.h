// Jinja's filters that order, pick or add up a sequence's items: sort, dictsort, unique, min,
// max and sum, with jinja2's arguments (case_sensitive, attribute, reverse, by, start). Strings
// compare case-insensitively unless case_sensitive, by an ASCII lower-casing (see map_case).
#pragma once
#include <string>
#include <string_view>

#include "text/jinja_builtins.h"

namespace fusor::text::jinja {

bool is_collection_filter(std::string_view name);
Value apply_collection_filter(const std::string& name, const Value& operand, const Args& args);

}  // namespace fusor::text::jinja
