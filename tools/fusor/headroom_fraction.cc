#include <exception>
#include <string>

#include "commands.h"
#include "fusor/capacity.h"

namespace fusor::cli {

CLI::Validator headroom_fraction() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const double h = std::stod(text, &used);
          if (used == text.size() && capacity::headroom_in_range(h)) return "";
        } catch (const std::exception&) {
        }
        return "must be a number in [0, 0.95), got '" + text + "'";
      },
      "[0, 0.95)");
}

}  // namespace fusor::cli
