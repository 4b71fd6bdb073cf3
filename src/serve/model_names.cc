// check_model_names (fusor/serve.h): a model's name is one segment of its URLs, as Triton's is a
// folder's name in its model repository.
#include <algorithm>
#include <cstdio>
#include <set>

#include "fusor/error.h"
#include "fusor/serve.h"

namespace fusor::serve {
namespace {

bool is_control(unsigned char c) { return c < ' ' || c == 0x7f; }

// The name on one line of an error message: control characters as \xNN.
std::string shown(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (!is_control(c)) {
      out += static_cast<char>(c);
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof(hex), "\\x%02x", c);
    out += hex;
  }
  return out;
}

// Why HTTP cannot route `name` to its model, or "" when it can.
std::string unroutable(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is a path step, which clients resolve away";
  if (name.find('/') != std::string::npos) return "contains '/', which /v2/models/NAME/... cannot route";
  if (std::any_of(name.begin(), name.end(), is_control)) return "contains a control character";
  if (name == "stats") return "is reserved: GET /v2/models/stats answers every model's statistics";
  return "";
}

}  // namespace

void check_model_names(const std::vector<std::string>& names) {
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (std::string why = unroutable(name); !why.empty())
      throw Error("model name '" + shown(name) + "' " + why, ErrorKind::InvalidArgument);
    if (!seen.insert(name).second)
      throw Error("model name '" + name + "' is given twice; each model needs its own", ErrorKind::InvalidArgument);
  }
}

}  // namespace fusor::serve
