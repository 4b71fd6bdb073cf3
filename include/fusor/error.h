// The one error type fusor throws. Messages are a single line that names what was wrong,
// so the CLI can print them as-is and exit non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace fusor {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace fusor
