// The onboard report page: reads the document's parts (onboard_inputs.h), writes the header
// with the verdict, and joins the sections (profile_sections.cc, tuning_sections.cc) under one
// style block.
#include "report/onboard_report.h"

#include "fusor/error.h"
#include "report/html.h"
#include "report/number_text.h"
#include "report/sections.h"
#include "tune/tuned_record_json.h"

namespace fusor::report {

using tune::ClassRecord;
using tune::TunedRecord;

namespace {

constexpr const char* kSource = "onboard report";

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1f2933; max-width: 1000px; margin: 24px auto; padding: 0 16px; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 4px; } h2 { margin-top: 36px; border-bottom: 1px solid #d5dbe1; padding-bottom: 4px; }
h3 { margin-top: 22px; } dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; margin: 8px 0; }
dl.meta dt { color: #52606d; } dl.meta dd { margin: 0; font-family: ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.verdict { font-size: 1.1em; background: #eef4ff; border-left: 4px solid #2f6fde; padding: 10px 14px; }
table { border-collapse: collapse; margin: 10px 0; font-size: 0.92em; display: block; max-width: 100%; overflow-x: auto; }
th, td { border-bottom: 1px solid #e4e7eb; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f5f7fa; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.chosen td, span.pick { background: #fff4d6; font-weight: 600; }
.good { color: #19743b; font-weight: 600; } .bad { color: #b42318; font-weight: 600; }
.note { color: #616e7c; font-style: italic; } .warn { color: #8a4b00; background: #fff7e6; padding: 6px 10px; }
.footnote { color: #52606d; font-size: 0.88em; }
figure { margin: 12px 0; } figcaption { color: #52606d; font-size: 0.88em; }
svg.chart { max-width: 100%; height: auto; font-family: inherit; }
svg .grid { stroke: #e4e7eb; stroke-width: 1; } svg .frame { fill: none; stroke: #9aa5b1; } svg .axis { stroke: #9aa5b1; }
svg .tick, svg .bar-value { font-size: 11px; fill: #52606d; } svg .axis-label { font-size: 12px; fill: #323f4b; }
svg .legend, svg .bar-label { font-size: 12px; fill: #1f2933; } svg .dot-label { font-size: 11px; fill: #1f2933; }
svg .ref-label { font-size: 11px; } svg .no-data { font-size: 14px; fill: #9aa5b1; }
details { margin: 8px 0; } summary { cursor: pointer; color: #2f6fde; }
@media print { body { max-width: none; margin: 0; } h2 { break-after: avoid; } figure, table { break-inside: avoid; } }
)";

std::string request_text(const JsonField& doc) {
  if (!doc.has("request")) return "-";
  JsonField request = doc.object("request");
  std::string out;
  for (const auto& [name, dims] : request.raw().items()) {
    if (!out.empty()) out += ", ";
    out += name + " " + dims.dump();
  }
  return out.empty() ? "-" : out;
}

std::string verdict(const Comparison& cmp, const CheckView& check, const ProfileView& before, const ProfileView& after,
                    const TunedRecord& record) {
  std::string v;
  const ClassRecord* c = cmp.class_name.empty() ? nullptr : record.find(cmp.class_name);
  const std::string slo = cmp.slo_p99_ms > 0 ? " at p99 &le; " + significant_digits(cmp.slo_p99_ms) + " ms" : "";
  if (cmp.throughput_ratio > 0) {
    const ClassRecord& b = *record.baseline;
    v = "Tuned: <b>" + fixed_decimals(cmp.throughput_ratio, 2) + "x</b> the default's throughput" + slo + " (" +
        significant_digits(c->capacity_qps, 4) + " vs " + significant_digits(b.capacity_qps, 4) + " requests/s)";
  } else if (c) {
    // No ratio: no baseline (the note says so), or a side that met the SLO at no measured rate.
    const double base = record.baseline ? record.baseline->capacity_qps : 0;
    const std::string why = !cmp.note.empty()     ? cmp.note
                            : c->capacity_qps > 0 ? "the default met the SLO at no measured rate"
                            : base > 0 ? "the tuned setting met the SLO at no measured rate; the default held it at " +
                                             significant_digits(base, 4) + " requests/s"
                                       : "neither the tuned setting nor the default met the SLO at any measured rate";
    v = "Tuned: " + significant_digits(c->capacity_qps, 4) + " requests/s" + slo + " (" + html_escape(why) + ")";
  } else {
    v = "Nothing was tuned";
  }
  size_t kept = 0;
  for (const CheckItemView& i : check.items) kept += i.status != ItemStatus::RolledBack;
  v += "; " + std::to_string(kept) + " fusions kept, " + std::to_string(check.rolled_back.size()) + " rolled back";
  v += "; " + std::to_string(before.kernels_per_inference) + " &rarr; " + std::to_string(after.kernels_per_inference) +
       " kernels per inference.";
  if (!check.passed) v += " <b class=\"bad\">The precision gate still fails: do not launch.</b>";
  if (record.interrupted) v += " <b class=\"bad\">Tuning was stopped early: these are the best results found so far.</b>";
  return v;
}

}  // namespace

namespace {

ComparisonInputs comparison_inputs(const ProfileView& after, const std::optional<PlanView>& plan) {
  ComparisonInputs inputs;
  inputs.flops_per_inference = after.model_flops / static_cast<double>(std::max<int64_t>(1, after.batch));
  inputs.peak_gflops = after.sgemm_gflops;
  inputs.cost_per_hour = plan ? plan->cost_per_hour : 0;
  inputs.planned = plan.has_value();
  return inputs;
}

}  // namespace

Comparison onboard_comparison(const nlohmann::json& onboard) {
  JsonField doc(onboard, "", kSource);
  std::optional<PlanView> plan;
  if (doc.has("plan")) plan = read_plan(doc.at("plan"));
  return compare_to_baseline(tune::tuned_record_from_json(doc.object("tuned").raw(), kSource),
                             comparison_inputs(read_profile(doc.object("profile").at("after")), plan));
}

std::string onboard_report_html(const nlohmann::json& onboard) {
  const JsonField doc(onboard, "", kSource);
  if (!onboard.is_object()) doc.fail("must be a JSON object");
  const std::string model = doc.text("model");
  const std::string machine = doc.text_or("machine", "unknown machine");
  const std::string generated_at = doc.text_or("generated_at", "");
  JsonField profile = doc.object("profile");
  const ProfileView before = read_profile(profile.at("before"));
  const ProfileView after = read_profile(profile.at("after"));
  const CheckView check = read_check(doc.at("check"));
  const TunedRecord record = tune::tuned_record_from_json(doc.object("tuned").raw(), kSource);
  std::optional<PlanView> plan;
  if (doc.has("plan")) plan = read_plan(doc.at("plan"));
  const std::vector<NamedFile> files = doc.has("files") ? read_files(doc.at("files")) : std::vector<NamedFile>{};

  const Comparison comparison = compare_to_baseline(record, comparison_inputs(after, plan));

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                     "<title>fusor onboard: " + html_escape(model) + "</title><style>" + kStyle + "</style></head><body>";
  html += "<header id=\"summary\"><h1>Pre-launch report: " + html_escape(model) + "</h1><dl class=\"meta\">";
  html += "<dt>machine</dt><dd>" + html_escape(machine) + "</dd>";
  html += "<dt>generated</dt><dd>" + html_escape(generated_at.empty() ? "-" : generated_at) + "</dd>";
  html += "<dt>request</dt><dd>" + html_escape(request_text(doc)) + "</dd>";
  html += "<dt>checklist</dt><dd>profile &rarr; optimize &rarr; check &rarr; tune &rarr; plan</dd></dl>";
  html += "<p class=\"verdict\">" + verdict(comparison, check, before, after, record) + "</p>";
  html += "<p>Sections: 2. per-op breakdown, 3. roofline, 4. fusions rolled back and not taken, 5. latency&ndash;throughput "
          "curves, 6. the chosen matrix, 7. baseline vs tuned, 8. capacity plan and files. Absolute times come from one "
          "machine and vary run to run; compare the ratios.</p></header>";
  html += breakdown_section(before, after);
  html += roofline_section(after);
  html += fusions_section(check, after);
  html += curves_section(record);
  html += matrix_section(record);
  html += comparison_section(comparison);
  html += plan_section(plan, files);
  if (doc.has("commands")) {  // the command lines that reproduce every artifact
    html += "<details class=\"commands\"><summary>The commands onboard ran</summary><pre>";
    for (const nlohmann::json& c : doc.at("commands").raw())
      if (c.is_string()) html += html_escape(c.get<std::string>()) + "\n";
    html += "</pre></details>";
  }
  return html + "<footer class=\"footnote\"><p>Written by fusor onboard. Self-contained: no scripts, no external "
                "resources.</p></footer></body></html>\n";
}

}  // namespace fusor::report
