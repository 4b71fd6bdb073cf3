// Durations as people write them on a command line.
#pragma once
#include <optional>
#include <string>

namespace fusor::tune {

// "30ms", "0.03s", "30us", or a bare number of milliseconds -> milliseconds; nullopt when the
// text is not a positive finite duration.
std::optional<double> parse_duration_ms(const std::string& text);

}  // namespace fusor::tune
