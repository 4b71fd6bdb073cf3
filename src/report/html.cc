#include "report/html.h"

#include <algorithm>

namespace fusor::report {

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

}  // namespace fusor::report
