// The pre-launch report of fusor onboard (docs/onboard.md): one self-contained HTML page (inline
// SVG charts, no scripts, no external resources) rendered from the onboard JSON document, which
// gathers what the checklist's steps wrote:
//
//   {"model", "machine", "generated_at", "request": {input: dims},
//    "profile": {"before": <fusor profile --json --no-fusion>, "after": <the fused plan's>},
//    "check": <fusor check --report>, "tuned": <tune::tuned_record_json_text>,
//    "plan": <fusor plan --json> or null, "files": {"tuned": "tuned.yaml", ...}}
//
// Invariants: every number shown is read from the document (measured by the steps), never from
// elsewhere; rendering the same document twice gives the same page.
#pragma once
#include <string>

namespace fusor::report {

// Throws fusor::Error (one line naming the field) when the text is not JSON or a required part
// is missing or has the wrong type: model, profile.before, profile.after, check and tuned are
// required; machine, generated_at, request, plan and files may be absent or null.
std::string render_onboard_report(const std::string& onboard_json);
// The report's baseline-vs-tuned comparison as a fixed-width table for a terminal.
std::string onboard_comparison_table(const std::string& onboard_json);

}  // namespace fusor::report
