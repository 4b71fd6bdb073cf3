// One label of a Prometheus text-format sample: name="value". Model and traffic-class names come
// from users, so the value is escaped as the format requires (backslash, double quote, newline);
// unescaped, a name such as we"ird broke every line of the scrape after it.
#pragma once
#include <string>
#include <string_view>

namespace fusor::serve {

std::string prometheus_label(std::string_view name, std::string_view value);

}  // namespace fusor::serve
