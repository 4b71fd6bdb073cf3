#include <cmath>
#include <exception>
#include <string>

#include "commands.h"

namespace fusor::cli {
namespace {

CLI::Validator finite_number(bool zero_too) {
  return CLI::Validator(
      [zero_too](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const double x = std::stod(text, &used);  // throws out_of_range past a double's range
          if (used == text.size() && std::isfinite(x) && (x > 0 || (zero_too && x == 0))) return "";
        } catch (const std::exception&) {
        }
        return std::string(zero_too ? "must be a finite number >= 0" : "must be a finite number > 0") + ", got '" +
               text + "'";
      },
      zero_too ? "NONNEGATIVE" : "POSITIVE");  // CLI11's names, so --help reads as before
}

}  // namespace

CLI::Validator positive_number() { return finite_number(false); }
CLI::Validator non_negative_number() { return finite_number(true); }

}  // namespace fusor::cli
