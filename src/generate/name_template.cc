#include "generate/name_template.h"

#include <algorithm>

#include "fusor/error.h"

namespace fusor {

void check_name_template(const std::string& name_template, const std::string& where) {
  size_t at = name_template.find("%d");
  if (at == std::string::npos || std::count(name_template.begin(), name_template.end(), '%') != 1)
    throw Error(where + ": name template '" + name_template + "' must hold one %d (the layer)", ErrorKind::InvalidModel);
}

std::string format_name(const std::string& name_template, int layer) {
  size_t at = name_template.find("%d");
  if (at == std::string::npos) return name_template;
  return name_template.substr(0, at) + std::to_string(layer) + name_template.substr(at + 2);
}

}  // namespace fusor
