// Text for the HTML report: every string from a model, a profile or a config goes through
// html_escape before it lands in HTML or SVG (op and file names may hold <, & and quotes).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace fusor::tune {

// Escapes & < > " ' so the result is safe in element text and in quoted attribute values.
std::string html_escape(std::string_view text);

// A number with `significant` significant digits, no exponent for everyday magnitudes and no
// trailing zeros: 131.5, 0.0021, 12000. Non-finite values read "n/a".
std::string short_number(double value, int significant = 3);

// value with `decimals` digits after the point: fixed_number(2.5, 2) == "2.50".
std::string fixed_number(double value, int decimals);

}  // namespace fusor::tune

namespace fusor::tune {

struct TableRow {
  std::vector<std::string> cells;  // HTML: the caller escapes text
  bool highlight = false;          // the chosen row
};

// A <table>; `align` holds one letter per column, 'l' or 'r' (numbers), left when short.
std::string html_table(const std::vector<std::string>& header, const std::vector<TableRow>& rows,
                       const std::string& align = "");

}  // namespace fusor::tune
