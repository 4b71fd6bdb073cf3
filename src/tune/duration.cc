#include "fusor/tune.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace fusor::tune {

std::optional<double> parse_duration_ms(const std::string& text) {
  static const std::pair<const char*, double> units[] = {{"ms", 1}, {"us", 1e-3}, {"s", 1e3}};
  std::string digits = text;
  double scale = 1;
  for (const auto& [suffix, factor] : units) {
    std::string s = suffix;
    if (digits.size() > s.size() && digits.compare(digits.size() - s.size(), s.size(), s) == 0) {
      digits.resize(digits.size() - s.size());
      scale = factor;
      break;
    }
  }
  if (digits.empty() || digits.find_first_not_of("0123456789.eE+-") != std::string::npos) return std::nullopt;
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(digits, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != digits.size() || !std::isfinite(x) || !(x > 0)) return std::nullopt;
  return x * scale;
}

}  // namespace fusor::tune
