// Sections 2-4 of the onboard report: where the time goes before and after fusion, the
// roofline of the fused plan, and the fusions rolled back or not taken.
#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "report/html.h"
#include "report/number_text.h"
#include "report/sections.h"
#include "report/svg_chart.h"

namespace fusor::report {
namespace {

constexpr size_t kTopOps = 12;
constexpr size_t kLabelledKernels = 5;
constexpr size_t kKernelRows = 10;

std::string ms(double v) { return significant_digits(v, 3); }
std::string pct(double fraction) { return significant_digits(100 * fraction, 3) + "%"; }

struct OpTimes {
  double before_ms = 0, after_ms = 0;
  int64_t before_calls = 0, after_calls = 0;
};

// A reason with its specifics (quoted names, numbers) blanked, so that declines of the same
// kind group together: "its K 384 differs from the group's 1536" -> "its K N differs ...".
std::string reason_pattern(const std::string& reason) {
  static const std::regex quoted("'[^']*'"), digits("[0-9]+(\\.[0-9]+)?");
  return std::regex_replace(std::regex_replace(reason, quoted, "'...'"), digits, "N");
}

std::string nodes_text(const std::vector<std::string>& nodes) {
  if (nodes.empty()) return "-";
  return nodes.front() + (nodes.size() > 1 ? " +" + std::to_string(nodes.size() - 1) + " more" : "");
}

}  // namespace

std::string breakdown_section(const ProfileView& before, const ProfileView& after) {
  std::map<std::string, OpTimes> by_op;
  for (const ProfileRowView& r : before.ops) by_op[r.name].before_ms += r.time_ms, by_op[r.name].before_calls += r.calls;
  for (const ProfileRowView& r : after.ops) by_op[r.name].after_ms += r.time_ms, by_op[r.name].after_calls += r.calls;
  std::vector<std::pair<std::string, OpTimes>> ops(by_op.begin(), by_op.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return std::max(a.second.before_ms, a.second.after_ms) > std::max(b.second.before_ms, b.second.after_ms);
  });

  svg::BarChart chart{"Milliseconds per inference by op type, before and after fusion", "ms per inference",
                      {"before (no fusion)", "after (fused plan)"}, {kColorBefore, kColorAfter}, {}};
  OpTimes other;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i < kTopOps || ops.size() == kTopOps + 1) {
      chart.groups.push_back({ops[i].first, {ops[i].second.before_ms, ops[i].second.after_ms}});
    } else {
      other.before_ms += ops[i].second.before_ms;
      other.after_ms += ops[i].second.after_ms;
    }
  }
  if (ops.size() > kTopOps + 1)
    chart.groups.push_back({"other (" + std::to_string(ops.size() - kTopOps) + " types)", {other.before_ms, other.after_ms}});

  std::vector<TableRow> rows;
  for (const auto& [op, t] : ops)
    rows.push_back({{html_escape(op), ms(t.before_ms), std::to_string(t.before_calls), ms(t.after_ms), std::to_string(t.after_calls)}});
  rows.push_back({{"<b>kernels (sum of steps)</b>", "<b>" + ms(before.steps_ms) + "</b>",
                   "<b>" + std::to_string(before.kernels_per_inference) + "</b>", "<b>" + ms(after.steps_ms) + "</b>",
                   "<b>" + std::to_string(after.kernels_per_inference) + "</b>"}});
  rows.push_back({{"latency (wall, median)", ms(before.latency_ms), "", ms(after.latency_ms), ""}});

  std::string speed = after.steps_ms > 0 ? fixed_decimals(before.steps_ms / after.steps_ms, 2) + "x" : "n/a";
  std::string out = "<section id=\"breakdown\"><h2>2. Where the time goes: per-op breakdown</h2>";
  out += "<p>One inference of the request shape, profiled op by op without fusion (before) and with the fused plan "
         "(after): kernel time " + ms(before.steps_ms) + " ms &rarr; " + ms(after.steps_ms) + " ms (" + speed +
         "), kernels per inference " + std::to_string(before.kernels_per_inference) + " &rarr; " +
         std::to_string(after.kernels_per_inference) + ". Fused op types (FusedMatMul, Attention, LayerNorm, ...) "
         "replace several of the op types before. The top " + std::to_string(kTopOps) +
         " op types are charted, the rest summed as &quot;other&quot;.</p>";
  out += "<figure>" + svg::bar_chart(chart) + "</figure>";
  out += html_table({"op type", "before ms", "before calls", "after ms", "after calls"}, rows, "lrrrr");
  return out + "</section>";
}

std::string roofline_section(const ProfileView& p) {
  const double peak = p.sgemm_gflops, bandwidth = p.copy_gbps;
  const double balance = bandwidth > 0 ? peak / bandwidth : 0;
  std::vector<const ProfileRowView*> plotted;
  double no_flop_ms = 0;
  size_t no_flop = 0;
  for (const ProfileRowView& k : p.kernels) {
    if (k.flops > 0 && k.intensity > 0 && k.gflops > 0) plotted.push_back(&k);
    else no_flop_ms += k.time_ms, ++no_flop;
  }
  std::stable_sort(plotted.begin(), plotted.end(), [](auto* a, auto* b) { return a->time_ms > b->time_ms; });

  // Round decades around the kernels and the ridge point, so both roofs show.
  double xlo = balance > 0 ? balance : 1, xhi = xlo, ylo = peak > 0 ? peak : 1, yhi = ylo;
  for (const ProfileRowView* k : plotted) {
    xlo = std::min(xlo, k->intensity), xhi = std::max(xhi, k->intensity);
    ylo = std::min(ylo, k->gflops), yhi = std::max(yhi, k->gflops);
  }
  svg::LineChart chart;
  chart.id = "roofline";
  chart.title = "Roofline of the fused plan: achieved GFLOP/s against arithmetic intensity, per kernel";
  chart.x = {"arithmetic intensity (FLOP/byte)", true, std::pow(10, std::floor(std::log10(xlo / 2))),
             std::pow(10, std::ceil(std::log10(xhi * 2)))};
  chart.y = {"GFLOP/s", true, std::pow(10, std::floor(std::log10(ylo / 2))), std::pow(10, std::ceil(std::log10(yhi * 1.5)))};
  chart.height = 420;
  if (peak > 0 && bandwidth > 0) {
    chart.series.push_back({"memory roof: " + significant_digits(bandwidth) + " GB/s", "#444",
                            {{chart.x.min, bandwidth * chart.x.min}, {balance, peak}}, true, false, false});
    chart.series.push_back({"compute roof: " + significant_digits(peak) + " GFLOP/s", "#111",
                            {{balance, peak}, {chart.x.max, peak}}, false, false, false});
  }
  const double total_ms = std::max(p.steps_ms, 1e-12);
  for (size_t i = 0; i < plotted.size(); ++i) {
    const ProfileRowView& k = *plotted[i];
    const double share = std::clamp(k.time_ms / total_ms, 0.0, 1.0);
    svg::Dot dot{k.intensity, k.gflops, 3 + 14 * std::sqrt(share), 0.25 + 0.6 * std::sqrt(share), kColorAfter, "", ""};
    if (i < kLabelledKernels) dot.label = std::to_string(i + 1);  // the # column of the table below
    dot.tooltip = k.name + " (" + k.op + "): " + ms(k.time_ms) + " ms, " + pct(share) + " of kernel time, " +
                  significant_digits(k.gflops) + " GFLOP/s, " + significant_digits(k.intensity) + " FLOP/B";
    chart.dots.push_back(std::move(dot));
  }

  std::vector<TableRow> rows;
  for (size_t i = 0; i < p.kernels.size() && i < kKernelRows; ++i) {
    const ProfileRowView& k = p.kernels[i];
    auto at = std::find(plotted.begin(), plotted.end(), &k);
    const size_t rank = at - plotted.begin();
    rows.push_back({{rank < kLabelledKernels ? std::to_string(rank + 1) : "", html_escape(k.name), html_escape(k.op), std::to_string(k.calls), ms(k.time_ms), pct(k.time_ms / total_ms),
                     significant_digits(k.gflops), significant_digits(k.gbps), significant_digits(k.intensity), html_escape(k.bound)}});
  }
  std::string out = "<section id=\"roofline\"><h2>3. Roofline</h2>";
  out += "<p>Each dot is one kernel of the fused plan (all its calls in one inference): x is its arithmetic intensity "
         "(FLOPs per byte read and written, from the cost model), y the GFLOP/s it achieved. Dot size and opacity "
         "grow with its share of kernel time; the numbered dots are the top kernels of the table below. The roofs are this machine's measured ceilings: copy bandwidth " +
         significant_digits(bandwidth) + " GB/s (dashed; a kernel below it is memory-bound) and sgemm peak " +
         significant_digits(peak) + " GFLOP/s, meeting at " + significant_digits(balance) + " FLOP/byte. "
         "The distance from a dot to the roof above it is the headroom left in that kernel.</p>";
  out += "<figure>" + svg::line_chart(chart) + "</figure>";
  if (no_flop > 0)
    out += "<p class=\"note\">" + std::to_string(no_flop) + " kernel(s) only move data (no FLOPs) and have no place on "
           "the chart: " + ms(no_flop_ms) + " ms per inference in total.</p>";
  out += html_table({"#", "kernel", "op", "calls", "ms", "share", "GFLOP/s", "GB/s", "FLOP/B", "bound"}, rows, "rllrrrrrrl");
  return out + "</section>";
}

std::string fusions_section(const CheckView& c, const ProfileView& after) {
  std::string out = "<section id=\"fusions\"><h2>4. Fusions rolled back, and fusions not taken</h2>";
  size_t kept = 0;
  std::vector<TableRow> rows;
  for (const CheckItemView& i : c.items) {
    if (i.status != ItemStatus::RolledBack) {
      ++kept;
      continue;
    }
    rows.push_back({{html_escape(i.name) + "<br><span class=\"note\">sample: " + html_escape(i.sample) + "</span>",
                     html_escape(i.kind), std::to_string(i.tier), significant_digits(i.max_abs), significant_digits(i.threshold),
                     i.threshold > 0 ? significant_digits(i.max_abs / i.threshold) + "x" : "-",
                     significant_digits(i.fused_vs_truth) + " / " + significant_digits(i.native_vs_truth)}});
  }
  out += "<h3>Rolled back by the precision gate</h3>";
  out += "<p>The gate (" + html_escape(c.mode) + " mode, " + std::to_string(c.samples) + " samples, " +
         std::to_string(c.rounds) + " round(s)) checked " + std::to_string(c.items.size()) + " fusion items: " +
         std::to_string(kept) + " kept, " + std::to_string(c.rolled_back.size()) + " rolled back; the final plan " +
         (c.passed ? "passes" : "<b class=\"bad\">still fails</b>") + ". Tier 1 checks an item alone against its "
         "unfused body, tier 2 its block output, tier 3 the model outputs, tier 4 edge cases (padded masks, scaled "
         "inputs, other shapes). An item is rolled back when it differs from native by more than the tolerance and is "
         "further from the float64 truth than native is.</p>";
  if (!c.fault_injected_into.empty())
    out += "<p class=\"warn\">A fault was injected on purpose into " + html_escape(c.fault_injected_into) +
           " (a fault-injection run): its rollback shows the gate at work.</p>";
  if (rows.empty()) out += "<p>No item was rolled back: every fusion item passed.</p>";
  else
    out += html_table({"item", "kind", "tier", "max abs vs native", "tolerance", "over", "vs truth: fused / native"},
                      rows, "llrrrrr");

  // Group the declined opportunities by pass and reason pattern.
  std::map<std::pair<std::string, std::string>, size_t> groups;
  for (const NotFusedView& d : after.not_fused) ++groups[{d.pass, reason_pattern(d.reason)}];
  std::vector<std::pair<std::pair<std::string, std::string>, size_t>> sorted(groups.begin(), groups.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  out += "<h3>Not fused, and why</h3>";
  out += "<p>Every fusion opportunity a pass declined in the fused plan, with its reason (docs/fusion.md), grouped by "
         "pass and reason (names and numbers in a reason are blanked for grouping: N, '...'). " +
         std::to_string(after.fusion_items) + " fusion items were taken.</p>";
  if (sorted.empty()) {
    out += "<p>None: no opportunity was declined.</p>";
  } else {
    std::vector<TableRow> group_rows, all_rows;
    for (const auto& [key, n] : sorted) group_rows.push_back({{html_escape(key.first), html_escape(key.second), std::to_string(n)}});
    for (const NotFusedView& d : after.not_fused)
      all_rows.push_back({{html_escape(d.pass), html_escape(nodes_text(d.nodes)), html_escape(d.reason)}});
    out += html_table({"pass", "reason", "count"}, group_rows, "llr");
    out += "<details><summary>All " + std::to_string(after.not_fused.size()) + " declined opportunities</summary>" +
           html_table({"pass", "nodes", "reason"}, all_rows, "lll") + "</details>";
  }
  return out + "</section>";
}

}  // namespace fusor::report
