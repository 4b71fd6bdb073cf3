// Renders a parsed chat template. Scoping follows jinja2: a for loop's body sees the variables
// around it, but what it sets stays inside one iteration (namespace() carries values out).
#pragma once
#include <string>

#include "text/jinja_ast.h"

namespace fusor::text::jinja {

// An error while rendering, with the template line it happened on.
struct RenderError {
  int line;
  std::string message;
};

// The text of `body` with `globals` as the top-level variables. Throws RenderError, or
// TemplateRaised (jinja_builtins.h) when the template calls raise_exception.
std::string render(const Body& body, const Dict& globals);

}  // namespace fusor::text::jinja
