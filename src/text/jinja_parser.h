// Parses a chat template into statements (text, {{ }}, if, for, set, macro) and expressions, with
// jinja2's operator precedence: filters and tests bind tightest, so `'a' + x | trim` trims x only.
// Anything outside the subset is a SyntaxError naming the line and the construct.
#pragma once
#include <string_view>

#include "text/jinja_ast.h"

namespace fusor::text::jinja {

Body parse_template(std::string_view source);

}  // namespace fusor::text::jinja
