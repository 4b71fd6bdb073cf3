// Numbers as the report writes them, in HTML and in the terminal table alike. (fusor plan's own
// text rounds to two decimals instead: capacity::two_decimals.)
#pragma once
#include <string>

namespace fusor::report {

// `digits` significant digits, no exponent for everyday magnitudes and no trailing zeros:
// 131.5, 0.0021, 12000. Non-finite values read "n/a".
std::string significant_digits(double value, int digits = 3);

// Exactly `decimals` digits after the point: fixed_decimals(2.5, 2) == "2.50". Non-finite: "n/a".
std::string fixed_decimals(double value, int decimals);

}  // namespace fusor::report
