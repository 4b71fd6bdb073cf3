#include "serve/prometheus_label.h"

namespace fusor::serve {

std::string prometheus_label(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  out += '"';
  return out;
}

}  // namespace fusor::serve
