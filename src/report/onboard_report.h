// The pre-launch report of fusor onboard: one self-contained HTML page (inline SVG charts, one
// style block, no scripts and no external resources) rendered from the onboard JSON document:
//
//   {"model", "machine", "generated_at", "request": {input: dims},
//    "profile": {"before": <fusor profile --json --no-fusion>, "after": <the fused plan's>},
//    "check": <fusor check --report>, "tuned": <tuned_record_json>,
//    "plan": <capacity_plan_json> or null, "files": {"tuned": "tuned.yaml", ...}}
//
// docs/onboard.md says what each section shows and how its numbers are computed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "report/comparison.h"

namespace fusor::report {

// Throws fusor::Error (one line naming the field) when a required part is missing or has the
// wrong type: model, profile.before, profile.after, check and tuned are required; machine,
// generated_at, request, plan and files may be absent or null.
std::string onboard_report_html(const nlohmann::json& onboard);

// The report's baseline-vs-tuned comparison, for the terminal (same inputs, same rows).
Comparison onboard_comparison(const nlohmann::json& onboard);

}  // namespace fusor::report
