// HTML for the report: every string from a model, a profile or a config goes through
// html_escape before it lands in HTML or SVG (op and file names may hold <, & and quotes).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace fusor::report {

// Escapes & < > " ' so the result is safe in element text and in quoted attribute values.
std::string html_escape(std::string_view text);

struct TableRow {
  std::vector<std::string> cells;  // HTML: the caller escapes text
  bool highlight = false;          // the chosen row
};

// A <table>; `align` holds one letter per column, 'l' or 'r' (numbers), left when short.
std::string html_table(const std::vector<std::string>& header, const std::vector<TableRow>& rows,
                       const std::string& align = "");

}  // namespace fusor::report
