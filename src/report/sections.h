// The sections of the onboard report, one function each (onboard_report.cc assembles the page).
// Each returns a <section> of HTML with every input text escaped.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "fusor/tuned_record.h"
#include "report/comparison.h"
#include "report/onboard_inputs.h"

namespace fusor::report {

// Colours shared by the sections (chart series and the style block).
inline constexpr const char* kColorBefore = "#9aa5b1";
inline constexpr const char* kColorAfter = "#2f6fde";
inline constexpr const char* kColorBaseline = "#6b7280";
inline constexpr const char* kColorSlo = "#c0392b";

std::string breakdown_section(const ProfileView& before, const ProfileView& after);
std::string roofline_section(const ProfileView& after);
std::string fusions_section(const CheckView& check, const ProfileView& after);
std::string curves_section(const tune::TunedRecord& record);
std::string matrix_section(const tune::TunedRecord& record);
std::string comparison_section(const Comparison& comparison);
std::string plan_section(const std::optional<PlanView>& plan, const std::vector<NamedFile>& files);

// "window 2 ms, max batch 4, 1 context"
std::string setting_label(const tune::Setting& s);

}  // namespace fusor::report
