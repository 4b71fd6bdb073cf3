#include "tune/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fusor::tune {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string short_number(double value, int significant) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  char buf[64];
  if (magnitude >= 1e-4 && magnitude < 1e15) {
    // Digits after the point so that `significant` digits show, none for large values.
    int decimals = significant - 1 - static_cast<int>(std::floor(std::log10(magnitude)));
    if (decimals < 0) decimals = 0;
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    std::string s = buf;
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s == "-0" ? "0" : s;
  }
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string fixed_number(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace fusor::tune

namespace fusor::tune {

std::string html_table(const std::vector<std::string>& header, const std::vector<TableRow>& rows, const std::string& align) {
  auto cls = [&](size_t i) { return i < align.size() && align[i] == 'r' ? std::string(" class=\"n\"") : std::string(); };
  std::string out = "<table>";
  if (std::any_of(header.begin(), header.end(), [](const std::string& h) { return !h.empty(); })) {
    out += "<thead><tr>";
    for (size_t i = 0; i < header.size(); ++i) out += "<th" + cls(i) + ">" + html_escape(header[i]) + "</th>";
    out += "</tr></thead>";
  }
  out += "<tbody>";
  for (const TableRow& r : rows) {
    out += r.highlight ? "<tr class=\"chosen\">" : "<tr>";
    for (size_t i = 0; i < r.cells.size(); ++i) out += "<td" + cls(i) + ">" + r.cells[i] + "</td>";
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

}  // namespace fusor::tune
