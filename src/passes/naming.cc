#include "passes/naming.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace fusor {
namespace {

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream s(name);
  for (std::string part; std::getline(s, part, '/');)
    if (!part.empty()) parts.push_back(part);
  if (!parts.empty()) parts.pop_back();  // the last component names the op, not a scope
  return parts;
}

// "layer.3" / "layers.3" / "layer_3" / "h.3" / "block3" -> "layer3"-style; otherwise lowercased.
std::string normalize(std::string part, bool& numbered) {
  std::string lower;
  for (char c : part) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t digits = lower.find_first_of("0123456789");
  numbered = digits != std::string::npos && digits > 0;
  if (numbered) {
    std::string stem = lower.substr(0, digits);
    while (!stem.empty() && (stem.back() == '.' || stem.back() == '_')) stem.pop_back();
    lower = stem + lower.substr(digits);
  }
  std::replace(lower.begin(), lower.end(), '.', '_');
  return lower;
}

}  // namespace

std::string common_scope(const Graph& g, const std::vector<int>& nodes) {
  if (nodes.empty()) return "";
  std::vector<std::string> common = split_path(g.nodes[static_cast<size_t>(nodes[0])].name);
  for (int n : nodes) {
    auto parts = split_path(g.nodes[static_cast<size_t>(n)].name);
    size_t k = 0;
    while (k < common.size() && k < parts.size() && common[k] == parts[k]) ++k;
    common.resize(k);
  }
  std::vector<std::string> normalized;
  size_t first_numbered = common.size();
  for (size_t i = 0; i < common.size(); ++i) {
    bool numbered = false;
    normalized.push_back(normalize(common[i], numbered));
    if (numbered && first_numbered == common.size()) first_numbered = i;
  }
  size_t start = first_numbered == common.size() ? 0 : first_numbered;
  std::string scope;
  for (size_t i = start; i < normalized.size(); ++i) scope += (scope.empty() ? "" : ".") + normalized[i];
  return scope;
}

std::string unique_item_name(const std::string& scope, const std::string& suffix, std::set<std::string>& taken) {
  bool ends_with_suffix = scope.size() >= suffix.size() && scope.compare(scope.size() - suffix.size(), suffix.size(), suffix) == 0;
  std::string base = scope.empty() ? suffix : ends_with_suffix ? scope : scope + "." + suffix;
  std::string name = base;
  for (int i = 2; taken.count(name); ++i) name = base + "." + std::to_string(i);
  taken.insert(name);
  return name;
}

}  // namespace fusor
