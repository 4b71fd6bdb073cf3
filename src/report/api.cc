// fusor/report.h over the report's JSON-typed functions.
#include "fusor/report.h"

#include <nlohmann/json.hpp>

#include "fusor/error.h"
#include "report/comparison.h"
#include "report/onboard_report.h"

namespace fusor::report {
namespace {

nlohmann::json parse(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the onboard document is not valid JSON: ") + e.what());
  }
}

}  // namespace

std::string render_onboard_report(const std::string& onboard_json) { return onboard_report_html(parse(onboard_json)); }

std::string onboard_comparison_table(const std::string& onboard_json) {
  return comparison_table(onboard_comparison(parse(onboard_json)));
}

}  // namespace fusor::report
