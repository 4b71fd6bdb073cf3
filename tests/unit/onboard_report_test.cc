// The onboard HTML report rendered from tests/fixtures/onboard/onboard.json (real MiniLM profile
// and gate reports, a hand-written tuned record and plan), and from broken variants of it.
// With FUSOR_REPORT_OUT set, the fixture's report is also written there (tests/e2e uses it).
#include "report/onboard_report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fusor/error.h"
#include "markup_check.h"
#include "report/comparison.h"
#include "tune/tuned_record_json.h"

namespace fusor::report {
namespace {

using nlohmann::json;
using tune::TunedRecord;

json fixture() {
  const auto path = std::filesystem::path(FUSOR_SOURCE_DIR) / "tests/fixtures/onboard/onboard.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return json::parse(in);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

// The Error message onboard_report_html gives for `doc`, "" when it renders.
std::string error_of(const json& doc) {
  try {
    onboard_report_html(doc);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(OnboardReport, RendersEverySectionOfTheFixture) {
  const std::string html = onboard_report_html(fixture());
  if (const char* out = std::getenv("FUSOR_REPORT_OUT")) std::ofstream(out) << html;
  EXPECT_EQ(fusor::test::markup_problem(html), "");
  for (const char* id : {"summary", "breakdown", "roofline", "fusions", "curves", "matrix", "comparison", "plan"})
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_EQ(count(html, "<svg"), 4u);  // op breakdown, roofline, one curve chart per class (2)
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "http://") + count(html, "https://"), 0u);  // nothing to load from outside

  // Header: the verdict from the fixture's numbers (150 vs 70 qps; 45 kept, 3 rolled back).
  EXPECT_NE(html.find("<b>2.14x</b> the default's throughput at p99 &le; 20 ms (150 vs 70 requests/s)"), std::string::npos);
  EXPECT_NE(html.find("45 fusions kept, 3 rolled back; 292 &rarr; 56 kernels per inference."), std::string::npos);
  EXPECT_NE(html.find("input_ids [1,32]"), std::string::npos);
  // Rolled back items with tier and error against tolerance; declined ones grouped by reason.
  EXPECT_NE(html.find("<td>layer5.attention.output.dense.bias_residual<br><span class=\"note\">sample: shape attention_mask=[1, 1], "
                      "random</span></td><td>FusedMatMul</td><td class=\"n\">4</td><td class=\"n\">0.000109</td>"
                      "<td class=\"n\">0.000162</td><td class=\"n\">0.673x</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>fuse_layer_norm</td><td>item &#39;...&#39; is disabled in the config (fusion.disabled)</td>"
                      "<td class=\"n\">2</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<details><summary>All 8 declined opportunities</summary>"), std::string::npos);
  // Curves: the chosen setting is labelled; the SLO line and the baseline on the interactive chart.
  EXPECT_NE(html.find("chosen: window 2 ms, max batch 8, 1 context"), std::string::npos);
  EXPECT_NE(html.find("SLO p99 20 ms"), std::string::npos);
  EXPECT_EQ(count(html, "baseline: the default (window 0 ms, max batch 1, 1 context, no fusion)"), 1u);
  // Matrix: the chosen option per batch size is highlighted.
  EXPECT_NE(html.find("<td class=\"n\">8</td><td class=\"n\">45</td><td class=\"n\"><span class=\"pick\">43.8</span></td>"),
            std::string::npos);
  // Baseline vs tuned: only what was measured (no case-study figures; docs/onboard.md cites those).
  EXPECT_NE(html.find("+114% (2.14x)"), std::string::npos);
  EXPECT_NE(html.find("62% -&gt; 72%"), std::string::npos);
  EXPECT_EQ(html.find("Production rollout"), std::string::npos);
  // Plan and files, linked relative to the report.
  EXPECT_NE(html.find("<b>20</b>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"k8s/deployment.yaml\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"tuned.yaml\">"), std::string::npos);
}

TEST(OnboardReport, ComparisonComesFromTheCapacityPoints) {
  const json doc = fixture();
  const TunedRecord record = tune::tuned_record_from_json(doc["tuned"], "fixture");
  const double flops = doc["profile"]["after"]["model_flops"].get<double>();
  const double peak = doc["profile"]["after"]["ceilings"]["sgemm_gflops"].get<double>();
  const Comparison c = compare_to_baseline(record, {flops, peak, 1.2});
  ASSERT_EQ(c.class_name, "interactive");
  ASSERT_EQ(c.rows.size(), 6u);
  EXPECT_DOUBLE_EQ(c.throughput_ratio, 150.0 / 70);
  EXPECT_EQ(*c.rows[0].baseline, 70);
  EXPECT_EQ(*c.rows[0].tuned, 150);
  EXPECT_EQ(c.rows[0].change, "+114% (2.14x)");
  EXPECT_TRUE(c.rows[0].improved);
  // The capacity point of each curve: offered 70 (baseline) and 150 (tuned).
  EXPECT_EQ(*c.rows[1].baseline, 11.0);
  EXPECT_EQ(*c.rows[1].tuned, 10.5);
  EXPECT_EQ(*c.rows[2].baseline, 17.5);
  EXPECT_EQ(*c.rows[2].tuned, 18.5);
  EXPECT_FALSE(c.rows[2].improved);  // more load per machine costs some p99 within the SLO
  EXPECT_EQ(c.rows[2].change, "+5.7%");
  EXPECT_DOUBLE_EQ(*c.rows[3].baseline, 69.5 * flops / 1e9 / peak);
  EXPECT_DOUBLE_EQ(*c.rows[3].tuned, 149.6 * flops / 1e9 / peak);
  EXPECT_EQ(c.rows[4].change, "62% -> 72%");
  EXPECT_DOUBLE_EQ(*c.rows[5].baseline, 1.2 / (70 * 3600) * 1e6);
  EXPECT_DOUBLE_EQ(*c.rows[5].tuned, 1.2 / (150 * 3600) * 1e6);
  EXPECT_EQ(c.rows[5].change, "-53%");
  const std::string table = comparison_table(c);
  EXPECT_NE(table.find("throughput at the SLO"), std::string::npos);
  EXPECT_NE(table.find("+114% (2.14x)"), std::string::npos);

  const Comparison no_cost = compare_to_baseline(record, {flops, peak, 0, true});
  EXPECT_FALSE(no_cost.rows[5].tuned);
  EXPECT_EQ(no_cost.rows[5].note, "set --cost-per-hour");
  // Without a plan (its step failed) a cost was perhaps given: the plan is what is missing.
  EXPECT_EQ(compare_to_baseline(record, {flops, peak, 0, false}).rows[5].note, "no capacity plan was made");
}

TEST(OnboardReport, EscapesEveryText) {
  json doc = fixture();
  doc["model"] = "<script>alert(1)</script>&\"x'";
  doc["profile"]["after"]["ops"][0]["name"] = "Op<&>\"";
  doc["profile"]["after"]["kernels"][0]["name"] = "k<b>";
  doc["check"]["items"][0]["name"] = "<img src=x>";
  doc["tuned"]["classes"][0]["name"] = "a&b<c>";
  doc["files"]["tuned"] = "t\"><script>.yaml";
  const std::string html = onboard_report_html(doc);
  EXPECT_EQ(fusor::test::markup_problem(html), "");
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "<img"), 0u);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&#39;"), std::string::npos);
  EXPECT_NE(html.find("Op&lt;&amp;&gt;&quot;"), std::string::npos);
  EXPECT_NE(html.find("a&amp;b&lt;c&gt;"), std::string::npos);
}

TEST(OnboardReport, MissingOrMalformedPartsAreOneLineErrors) {
  const json good = fixture();
  auto without = [&](const json::json_pointer& p) {
    json d = good;
    d[p.parent_pointer()].erase(p.back());
    return d;
  };
  auto with = [&](const json::json_pointer& p, json v) {
    json d = good;
    d[p] = std::move(v);
    return d;
  };
  EXPECT_EQ(error_of(json::array()), "onboard report: the document must be a JSON object");
  EXPECT_EQ(error_of(without("/check"_json_pointer)), "onboard report: check is missing");
  EXPECT_EQ(error_of(without("/model"_json_pointer)), "onboard report: model is missing");
  EXPECT_EQ(error_of(without("/profile/before"_json_pointer)), "onboard report: profile.before is missing");
  EXPECT_EQ(error_of(with("/profile/after/kernels/0/time_ms"_json_pointer, "fast")),
            "onboard report: profile.after.kernels[0].time_ms must be a number");
  EXPECT_EQ(error_of(with("/profile/after/ceilings"_json_pointer, 3)), "onboard report: profile.after.ceilings must be an object");
  EXPECT_EQ(error_of(with("/check/items"_json_pointer, json::object())), "onboard report: check.items must be a list");
  EXPECT_EQ(error_of(with("/check/items/0/status"_json_pointer, "maybe")),
            "onboard report: check.items[0].status must be \"kept\" or \"rolled_back\"");
  EXPECT_EQ(error_of(without("/tuned/classes"_json_pointer)), "onboard report: tuned.classes is missing");
  EXPECT_EQ(error_of(with("/tuned"_json_pointer, "x")), "onboard report: tuned must be an object");
  EXPECT_EQ(error_of(with("/plan"_json_pointer, "big")),
            "onboard report: plan must be an object (capacity_plan_json) or null");
  EXPECT_EQ(error_of(with("/plan/predicted"_json_pointer, json::array())), "onboard report: plan.predicted must be an object");
  EXPECT_EQ(error_of(with("/files/k8s"_json_pointer, 7)), "onboard report: files.k8s must be text");
  EXPECT_EQ(error_of(with("/request"_json_pointer, "1x32")), "onboard report: request must be an object");
}

TEST(OnboardReport, TheMatrixShowsTheRoundsEvidenceWhenTheRecordHasIt) {
  json doc = fixture();
  auto& row = doc["tuned"]["matrix"][7];  // 8 rows, no-attention, chosen over all
  ASSERT_EQ(row["option"], "no-attention");
  row["rounds"] = 8, row["wins"] = 7, row["ratio"] = 0.9612, row["ratio_mad"] = 0.0081;
  for (const char* key : {"rounds", "wins", "ratio", "ratio_mad"}) doc["tuned"]["matrix"][6][key] = key == std::string("ratio") ? 1 : 0;
  const std::string html = onboard_report_html(doc);
  EXPECT_EQ(fusor::test::markup_problem(html), "");
  EXPECT_NE(html.find("<span class=\"pick\">43.8</span> <span class=\"note\">7/8, -3.9% &plusmn; 0.8%</span>"), std::string::npos);
  // The first option (all) is what the others are compared with: no evidence beside it.
  EXPECT_NE(html.find("<td class=\"n\">8</td><td class=\"n\">45</td>"), std::string::npos);
}

TEST(OnboardReport, TokenCountsShowBesideRequestsPerSecondWhenTheRecordHasThem) {
  json doc = fixture();
  const std::string before = onboard_report_html(doc);
  EXPECT_EQ(before.find("useful tokens/s"), std::string::npos);  // records without token counts: as before
  // Every point of every candidate gets token counts; the chosen setting of the first class a budget.
  auto& cls = doc["tuned"]["classes"][0];
  for (auto& k : cls["candidates"])
    for (auto& p : k["curve"]) p["useful_tokens_per_s"] = 12345.0, p["padding"] = 0.031, p["bucket_padding"] = 0.12;
  cls["chosen"]["max_batch_tokens"] = 1024;
  for (auto& k : cls["candidates"])
    if (k["setting"]["batch_window_ms"] == cls["chosen"]["batch_window_ms"] && k["setting"]["max_batch"] == cls["chosen"]["max_batch"])
      k["setting"]["max_batch_tokens"] = 1024;
  const std::string html = onboard_report_html(doc);
  EXPECT_EQ(fusor::test::markup_problem(html), "");
  EXPECT_NE(html.find("useful tokens/s"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">1024</td><td class=\"n\">12345</td><td class=\"n\">3.1%</td><td class=\"n\">12%</td>"),
            std::string::npos)
      << html.substr(html.find("useful tokens/s"), 1500);
  EXPECT_NE(html.find("max batch tokens 1024"), std::string::npos);  // the setting's label
  // The other class has no token counts: dashes, not zeros.
  EXPECT_NE(html.find("<td class=\"n\">&ndash;</td><td class=\"n\">&ndash;</td><td class=\"n\">&ndash;</td>"), std::string::npos);
}

// A decoder's record: the curves chart the first token's latency, the matrix lists the
// generation settings, the comparison reads tokens/s, TTFT and ITL instead of compute efficiency,
// and the plan its tokens per second.
TEST(OnboardReport, AGenerativeRecordShowsGenerationSettingsAndLatencies) {
  json doc = fixture();
  TunedRecord record = tune::tuned_record_from_json(doc["tuned"], "fixture");
  record.generative = true;
  record.output_tokens = 64;
  record.min_length = 16, record.max_length = 128;
  record.matrix.clear();
  auto generative = [](tune::ClassRecord& c) {
    c.slo.ttft_p99_ms = 500, c.slo.itl_p99_ms = 50;
    for (tune::Candidate& k : c.candidates) {
      const bool chosen = k.setting == c.chosen;
      k.setting.step_tokens = 256, k.setting.max_running = chosen ? 8 : 16, k.setting.prefill_chunk = 64;
      if (chosen) c.chosen = k.setting;
      for (tune::CurvePoint& p : k.curve)
        p.ttft_p50_ms = 40, p.ttft_p99_ms = 321, p.itl_p50_ms = 10, p.itl_p99_ms = 23, p.output_tokens_per_s = 64 * p.achieved_qps;
    }
    c.capacity_tokens_per_s = 64 * c.capacity_qps;
  };
  for (tune::ClassRecord& c : record.classes) generative(c);
  generative(*record.baseline);
  doc["tuned"] = tune::tuned_record_json(record);
  doc["plan"]["generative"] = {{"output_tokens", 64},
                               {"capacity_tokens_per_s_per_instance", 4321.0},
                               {"per_instance_tokens_per_s", 1234.0},
                               {"setting", {{"step_tokens", 256}, {"max_running", 8}, {"prefill_chunk", 64}}},
                               {"ttft_target_ms", 500.0},
                               {"itl_target_ms", 50.0},
                               {"predicted", {{"ttft_p99_ms", 321.0}, {"itl_p99_ms", 23.0}}}};
  const std::string html = onboard_report_html(doc);
  EXPECT_EQ(fusor::test::markup_problem(html), "");
  for (const char* text : {"Time to first token against throughput", "step 256 tokens, 8 running, prefill chunk 64",
                           "TTFT p99 &le; 500 ms, ITL p99 &le; 50 ms", "TTFT p99 at capacity", "tokens/s at the SLO",
                           "1234 (capacity 4321)", "321 ms / 23 ms", "the config's own generation settings"})
    EXPECT_NE(html.find(text), std::string::npos) << text;
  EXPECT_EQ(html.find("compute efficiency"), std::string::npos);
  // A malformed generative plan is a one-line error, not a crash.
  doc["plan"]["generative"].erase("predicted");
  EXPECT_NE(error_of(doc).find("predicted"), std::string::npos);
}

TEST(OnboardReport, EmptyPartsRenderWithoutCrashing) {
  json doc = fixture();
  doc["profile"]["after"]["kernels"] = json::array();
  doc["profile"]["after"]["ops"] = json::array();
  doc["profile"]["after"]["not_fused"] = json::array();
  doc["profile"]["after"]["steps_ms"] = 0;
  doc["profile"]["after"]["ceilings"]["sgemm_gflops"] = 0;
  doc["check"]["items"] = json::array();
  doc["tuned"]["classes"][0]["candidates"][0]["curve"] = json::array();
  doc["tuned"]["classes"][1]["candidates"] = json::array();
  doc["tuned"]["baseline"] = nullptr;
  doc["tuned"]["matrix"] = json::array();
  doc["plan"] = nullptr;
  doc.erase("files");
  doc.erase("machine");
  const std::string html = onboard_report_html(doc);
  EXPECT_EQ(fusor::test::markup_problem(html), "");
  EXPECT_NE(html.find("no data"), std::string::npos);  // the empty roofline and class charts
  EXPECT_NE(html.find("No setting was measured for this class."), std::string::npos);
  EXPECT_NE(html.find("no baseline was measured"), std::string::npos);
  EXPECT_NE(html.find("No capacity plan was made"), std::string::npos);
  EXPECT_NE(html.find("None: no opportunity was declined."), std::string::npos);

  doc["tuned"]["classes"] = json::array();
  const std::string bare = onboard_report_html(doc);
  EXPECT_EQ(fusor::test::markup_problem(bare), "");
  EXPECT_NE(bare.find("No class was tuned."), std::string::npos);
}

// No point of the tuned setting met the SLO (capacity 0), while the default held it at 70 qps:
// the verdict says which side failed, and the tuned side has no figures "at capacity" (they were
// read at its first point, which failed the SLO).
TEST(OnboardReport, ATunedSettingWithoutCapacityHasNoFiguresAtCapacity) {
  json doc = fixture();
  json& cls = doc["tuned"]["classes"][0];
  cls["capacity_qps"] = 0.0;
  for (json& k : cls["candidates"]) k["capacity_qps"] = 0.0;
  for (const bool points_failed : {false, true}) {  // the record's capacity alone, or its points too
    if (points_failed)
      for (json& k : cls["candidates"])
        for (json& p : k["curve"]) p["p99_ms"] = 500.0;
    const std::string html = onboard_report_html(doc);
    EXPECT_NE(html.find("the tuned setting met the SLO at no measured rate; the default held it at 70 requests/s"),
              std::string::npos);
    EXPECT_EQ(html.find("the baseline met no point"), std::string::npos);
    const Comparison c = onboard_comparison(doc);
    for (const ComparisonRow& row : c.rows)
      if (row.measure.find("at capacity") != std::string::npos || row.measure == "compute efficiency") {
        EXPECT_FALSE(row.tuned) << row.measure;
        EXPECT_TRUE(row.baseline) << row.measure;
      }
  }
}

TEST(OnboardReport, ZeroCostAsksForIt) {
  json doc = fixture();
  doc["plan"]["cost_per_hour"] = 0;
  const std::string html = onboard_report_html(doc);
  EXPECT_EQ(count(html, "set --cost-per-hour"), 2u);  // the comparison row and the plan
}

}  // namespace
}  // namespace fusor::report
