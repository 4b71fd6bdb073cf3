#include "report/number_text.h"

#include <cmath>
#include <cstdio>

namespace fusor::report {

std::string significant_digits(double value, int digits) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  char buf[64];
  if (magnitude >= 1e-4 && magnitude < 1e15) {
    // Digits after the point so that `digits` significant ones show, none for large values.
    int decimals = digits - 1 - static_cast<int>(std::floor(std::log10(magnitude)));
    if (decimals < 0) decimals = 0;
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    std::string s = buf;
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s == "-0" ? "0" : s;
  }
  std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  return buf;
}

std::string fixed_decimals(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace fusor::report
