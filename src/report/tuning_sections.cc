// Sections 5-8 of the onboard report: latency-throughput curves, the chosen matrix, baseline vs
// tuned, and the capacity plan with the files written.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/html.h"
#include "report/number_text.h"
#include "report/sections.h"
#include "report/svg_chart.h"

namespace fusor::report {

using tune::Candidate;
using tune::ClassRecord;
using tune::CurvePoint;
using tune::MatrixTiming;
using tune::Setting;
using tune::Slo;
using tune::TunedRecord;

namespace {

constexpr const char* kPalette[] = {"#2f6fde", "#e8743b", "#19a979", "#945ecf", "#ed4a7b", "#13a4b4", "#b8860b"};
// A latency chart's y axis stops at this multiple of the SLO, so overload points do not flatten it.
constexpr double kSloZoom = 3;

std::string ms(double v) { return significant_digits(v, 3) + " ms"; }

std::string slo_text(const Slo& s) {
  std::string out;
  for (auto [name, v] : {std::pair{"TTFT p99", s.ttft_p99_ms}, {"ITL p99", s.itl_p99_ms}})
    if (v > 0) out += (out.empty() ? "" : ", ") + std::string(name) + " &le; " + ms(v);
  if (s.throughput) return "throughput" + (s.p99_ms > 0 ? " (p99 bound " + ms(s.p99_ms) + ")" : std::string());
  if (s.p99_ms > 0) out += (out.empty() ? "" : ", ") + std::string("p99 &le; ") + ms(s.p99_ms);
  return out;
}

// A generative class's chart plots the first token's latency (what its SLO bounds first); an
// encoder's, the whole request's.
void add_curve(svg::LineChart& chart, const Candidate& k, const std::string& name, const std::string& color, bool chosen,
               bool generative) {
  svg::Series p99{name, color, {}, false, true, chosen}, p50{"", color, {}, true, false, chosen};
  for (const CurvePoint& pt : k.curve) {
    p99.points.push_back({pt.achieved_qps, generative ? pt.ttft_p99_ms : pt.p99_ms});
    p50.points.push_back({pt.achieved_qps, generative ? pt.ttft_p50_ms : pt.p50_ms});
  }
  chart.series.push_back(std::move(p50));
  chart.series.push_back(std::move(p99));
}

std::string class_curves(const ClassRecord& c, const ClassRecord* baseline, size_t index, bool generative) {
  svg::LineChart chart;
  chart.id = "curve" + std::to_string(index);
  chart.title = (generative ? "Time to first token against throughput, class " : "Latency against throughput, class ") + c.name;
  chart.x = {"achieved throughput (requests/s)"};
  // A throughput class's latencies span decades up to its loose bound: a log axis keeps them apart.
  chart.y = {c.slo.throughput ? "latency (ms, log scale)" : "latency (ms)", c.slo.throughput};
  double top = 0;
  std::vector<TableRow> rows;
  for (size_t i = 0; i < c.candidates.size(); ++i) {
    const Candidate& k = c.candidates[i];
    const bool chosen = k.setting == c.chosen;
    add_curve(chart, k, (chosen ? "chosen: " : "") + setting_label(k.setting), kPalette[i % std::size(kPalette)], chosen,
              generative);
    for (const CurvePoint& p : k.curve) top = std::max(top, generative ? p.ttft_p99_ms : p.p99_ms);
    rows.push_back({{html_escape(setting_label(k.setting)), significant_digits(k.predicted_qps, 4), significant_digits(k.capacity_qps, 4),
                     std::to_string(k.curve.size()), chosen ? "&#9733;" : ""},
                    chosen});
  }
  if (baseline) {
    const Candidate* k = baseline->chosen_candidate();
    if (!k && !baseline->candidates.empty()) k = &baseline->candidates.front();
    if (k) {
      const std::string what = generative ? "" : ", no fusion";  // a decoder's baseline is the default config, fused
      add_curve(chart, *k, "baseline: the default (" + setting_label(k->setting) + what + ")", kColorBaseline, false, generative);
      for (const CurvePoint& p : k->curve) top = std::max(top, generative ? p.ttft_p99_ms : p.p99_ms);
      rows.push_back({{"baseline: " + html_escape(setting_label(k->setting)) + what, significant_digits(k->predicted_qps, 4),
                       significant_digits(baseline->capacity_qps, 4), std::to_string(k->curve.size()), ""}});
    }
  }
  std::string zoom;
  const double bound = generative ? c.slo.ttft_p99_ms : c.slo.p99_ms;
  if (bound > 0) {
    chart.references.push_back(
        {bound, (generative ? "SLO TTFT p99 " : c.slo.throughput ? "p99 bound " : "SLO p99 ") + ms(bound), kColorSlo});
    if (!c.slo.throughput && top > kSloZoom * bound) {
      chart.y.min = 0;
      chart.y.max = kSloZoom * bound;
      zoom = " The latency axis stops at " + significant_digits(kSloZoom) + "x the SLO; overload points beyond it are cut off.";
    }
  }
  std::string out = "<h3>Class " + html_escape(c.name) + " &mdash; " + slo_text(c.slo) + ", capacity " +
                    significant_digits(c.capacity_qps, 4) + " requests/s</h3>";
  out += "<figure>" + svg::line_chart(chart) + "<figcaption>Solid lines: p99; dashed: p50 (same colour)" +
         std::string(generative ? " of the time to first token" : "") +
         ". One line per measured setting, one point per offered rate (open-loop arrivals); the chosen setting is drawn "
         "thick." + zoom + "</figcaption></figure>";
  if (c.candidates.empty()) out += "<p class=\"warn\">No setting was measured for this class.</p>";
  out += html_table({"setting", "predicted capacity (qps)", "measured capacity (qps)", "points", "chosen"}, rows, "lrrrl");
  return out;
}

}  // namespace

std::string setting_label(const Setting& s) {
  if (s.step_tokens > 0)
    return "step " + std::to_string(s.step_tokens) + " tokens, " + std::to_string(s.max_running) + " running, prefill chunk " +
           (s.prefill_chunk > 0 ? std::to_string(s.prefill_chunk) : "= step");
  return "window " + significant_digits(s.batch_window_ms) + " ms, " +
         (s.max_batch_tokens > 0 ? "max batch tokens " + std::to_string(s.max_batch_tokens) + ", " : std::string()) +
         "max batch " + std::to_string(s.max_batch) + ", " + std::to_string(s.execution_contexts) +
         (s.execution_contexts == 1 ? " context" : " contexts");
}

std::string curves_section(const TunedRecord& r) {
  std::string out = "<section id=\"curves\"><h2>5. Latency&ndash;throughput curves</h2>";
  out += "<p>For each traffic class, every " + std::string(r.generative ? "continuous-batching" : "batching") +
         " setting fusor tune measured: the load generator offered rising rates (" + html_escape(r.arrivals) +
         " arrivals, " + significant_digits(r.duration_s) + " s per point) and recorded the answered rate and the "
         "latency percentiles. A setting's capacity is the highest offered rate that kept the class's SLO. The baseline (" +
         (r.generative ? "the config's own generation settings" : "no fusion, no reuse, no batching") +
         ") is drawn on its class's chart.</p>";
  if (r.classes.empty()) out += "<p class=\"warn\">No class was tuned.</p>";
  for (size_t i = 0; i < r.classes.size(); ++i) {
    const ClassRecord& c = r.classes[i];
    const ClassRecord* baseline = r.baseline && r.baseline->name == c.name ? &*r.baseline : nullptr;
    out += class_curves(c, baseline, i, r.generative);
  }
  return out + "</section>";
}

std::string matrix_section(const TunedRecord& r) {
  std::string out = "<section id=\"matrix\"><h2>6. The chosen matrix</h2><h3>Batching per class</h3>";
  std::vector<TableRow> rows;
  // Token columns when the record has them (tuned with token counts): useful tokens/s and the
  // padding at each class's capacity point, and the token budget of a model that packs.
  auto at_capacity = [](const ClassRecord& c) {
    const Candidate* k = c.chosen_candidate();
    return k ? capacity_point(k->curve, c.slo) : nullptr;
  };
  bool tokens = false;
  for (const ClassRecord& c : r.classes)
    if (const CurvePoint* p = at_capacity(c); p && p->useful_tokens_per_s > 0) tokens = true;
  if (r.generative) {
    for (const ClassRecord& c : r.classes) {
      const CurvePoint* p = at_capacity(c);
      rows.push_back({{html_escape(c.name), slo_text(c.slo), std::to_string(c.chosen.step_tokens),
                       std::to_string(c.chosen.max_running),
                       c.chosen.prefill_chunk > 0 ? std::to_string(c.chosen.prefill_chunk) : "= step",
                       significant_digits(c.capacity_qps, 4), significant_digits(c.capacity_tokens_per_s, 4),
                       p ? ms(p->ttft_p99_ms) : "&ndash;", p ? ms(p->itl_p99_ms) : "&ndash;"}});
    }
    out += "<p>A decoder is served by continuous batching: per class, the step token budget, the sequences it runs at "
           "once and the prompt tokens it adds to one step. Requests of " + std::to_string(r.min_length) + "&ndash;" +
           std::to_string(r.max_length) + " prompt tokens generating " + std::to_string(r.output_tokens) + " each.</p>";
    return out + html_table({"class", "objective", "step tokens", "max running", "prefill chunk", "capacity (requests/s)",
                             "tokens/s", "TTFT p99", "ITL p99"},
                            rows, "llrrrrrrr") + "</section>";
  }
  for (const ClassRecord& c : r.classes) {
    TableRow row{{html_escape(c.name), slo_text(c.slo), significant_digits(c.chosen.batch_window_ms),
                  std::to_string(c.chosen.max_batch), std::to_string(c.chosen.execution_contexts),
                  significant_digits(c.capacity_qps, 4)}};
    if (tokens) {
      const CurvePoint* p = at_capacity(c);
      if (p && p->useful_tokens_per_s <= 0) p = nullptr;  // measured before token counts
      row.cells.push_back(c.chosen.max_batch_tokens > 0 ? std::to_string(c.chosen.max_batch_tokens) : "&ndash;");
      row.cells.push_back(p ? significant_digits(p->useful_tokens_per_s, 4) : "&ndash;");
      row.cells.push_back(p ? significant_digits(100 * p->padding, 2) + "%" : "&ndash;");
      row.cells.push_back(p ? significant_digits(100 * p->bucket_padding, 2) + "%" : "&ndash;");
    }
    rows.push_back(std::move(row));
  }
  if (tokens)
    out += html_table({"class", "objective", "batch window (ms)", "max batch", "execution contexts", "capacity (qps)",
                       "max batch tokens", "useful tokens/s", "padding computed", "padding of length buckets"},
                      rows, "llrrrrrrrr");
  else
    out += html_table({"class", "objective", "batch window (ms)", "max batch", "execution contexts", "capacity (qps)"}, rows, "llrrrr");

  // Rows: batch sizes; columns: fusion options in order of first appearance.
  std::vector<std::string> options;
  std::vector<int64_t> sizes;
  for (const MatrixTiming& m : r.matrix) {
    if (std::find(options.begin(), options.end(), m.option) == options.end()) options.push_back(m.option);
    if (std::find(sizes.begin(), sizes.end(), m.rows) == sizes.end()) sizes.push_back(m.rows);
  }
  std::sort(sizes.begin(), sizes.end());
  out += "<h3>Fusion per batch size</h3><p>The median service time of one batch of each size under each fusion option; "
         "the highlighted cell is the option chosen for that size (written to serve.matrix). Small and large batches "
         "can prefer different fusion strategies. The options ran in alternated rounds; beside each other option's time "
         "are the rounds it ran faster than the first, of those timed, and its median time against the first's &plusmn; "
         "the rounds' spread. The first is kept unless another won three rounds in four by more than max(3%, twice that "
         "spread).</p>";
  if (r.matrix.empty()) return out + "<p>No per-batch-size timings were measured.</p></section>";
  std::vector<std::string> header = {"batch rows"};
  for (const std::string& o : options) header.push_back(o + " (ms)");
  header.push_back("chosen");
  std::vector<TableRow> cells;
  for (int64_t n : sizes) {
    TableRow row{{std::to_string(n)}};
    std::string chosen = "-";
    for (const std::string& o : options) {
      auto it = std::find_if(r.matrix.begin(), r.matrix.end(), [&](const MatrixTiming& m) { return m.rows == n && m.option == o; });
      if (it == r.matrix.end()) {
        row.cells.push_back("-");
        continue;
      }
      std::string cell = significant_digits(it->ms, 3);
      if (it->chosen) cell = "<span class=\"pick\">" + cell + "</span>", chosen = html_escape(o);
      if (it->rounds > 0 && o != options.front()) {  // the rounds' evidence; records before them have none
        char buf[96];
        std::snprintf(buf, sizeof buf, " <span class=\"note\">%lld/%lld, %+.1f%% &plusmn; %.1f%%</span>",
                      static_cast<long long>(it->wins), static_cast<long long>(it->rounds), (it->ratio - 1) * 100,
                      it->ratio_mad * 100);
        cell += buf;
      }
      row.cells.push_back(cell);
    }
    row.cells.push_back(chosen);
    cells.push_back(std::move(row));
  }
  return out + html_table(header, cells, "r" + std::string(options.size(), 'r') + "l") + "</section>";
}

std::string comparison_section(const Comparison& c) {
  std::string out = "<section id=\"comparison\"><h2>7. Baseline vs tuned</h2>";
  if (c.class_name.empty()) return out + "<p class=\"warn\">" + html_escape(c.note) + ".</p></section>";
  if (c.generative)
    out += "<p>Class " + html_escape(c.class_name) + " at its SLO. The baseline is the config's own generation settings "
           "(serve.step_tokens and serve.max_sequences, no class limits; fused like the tuned one). Latency and "
           "utilisation (tokens/s over the setting's saturated peak) are read at each side's capacity point. Cost per "
           "million = cost per instance-hour &divide; (capacity &times; 3600) &times; 10<sup>6</sup> requests.</p>";
  else
    out += "<p>Class " + html_escape(c.class_name) + (c.slo_p99_ms > 0 ? " at its SLO, p99 &le; " + ms(c.slo_p99_ms) : "") +
           ". The baseline is the default setting: no fusion, no buffer reuse, no batching. Latency, efficiency and "
           "utilisation are read at each side's capacity point (the measured point at the capacity, or the highest one "
           "below it). Compute efficiency = achieved inferences/s &times; FLOPs per inference &divide; the machine's "
           "sgemm peak. Cost per million = cost per instance-hour &divide; (capacity &times; 3600) &times; 10<sup>6</sup>.</p>";
  std::vector<TableRow> rows;
  for (const ComparisonRow& r : c.rows) {
    std::string change = r.change.empty() ? "" : "<span class=\"" + std::string(r.improved ? "good" : "bad") + "\">" +
                                                     html_escape(r.change) + "</span>";
    if (!r.note.empty()) change += (change.empty() ? "" : " ") + std::string("<span class=\"note\">") + html_escape(r.note) + "</span>";
    rows.push_back({{html_escape(r.measure), html_escape(r.baseline_text), html_escape(r.tuned_text), change}});
  }
  out += html_table({"measure", "baseline", "tuned", "change"}, rows, "lrrl");
  if (!c.note.empty()) out += "<p class=\"warn\">" + html_escape(c.note) + ".</p>";
  return out + "</section>";
}

std::string plan_section(const std::optional<PlanView>& plan, const std::vector<NamedFile>& files) {
  // Links only to relative paths: the report travels with its folder.
  auto link = [](const std::string& path) {
    const bool relative = !path.empty() && path.front() != '/' && path.find(':') == std::string::npos;
    return relative ? "<a href=\"" + html_escape(path) + "\">" + html_escape(path) + "</a>" : html_escape(path);
  };
  std::string out = "<section id=\"plan\"><h2>8. Capacity plan and files</h2>";
  if (!plan) {
    out += "<p>No capacity plan was made: the plan step failed (its message is in onboard's output, and its command "
           "among the commands below).</p>";
  } else {
    const PlanView& p = *plan;
    Setting setting{p.batch_window_ms, p.max_batch, p.execution_contexts};
    if (p.generative) {
      setting.step_tokens = p.generative->step_tokens;
      setting.max_running = p.generative->max_running;
      setting.prefill_chunk = p.generative->prefill_chunk;
    }
    out += "<p>Class " + html_escape(p.class_name) + " at " + significant_digits(p.qps, 4) + " requests/s, from the measured "
           "curve of its chosen setting (" + html_escape(setting_label(setting)) +
           "), keeping " + significant_digits(100 * p.headroom) + "% headroom.</p>";
    std::vector<TableRow> rows = {
        {{"instances", "<b>" + std::to_string(p.instances) + "</b>"}},
        {{"capacity per instance", significant_digits(p.capacity_qps_per_instance, 4) + " qps" +
                                       (p.p99_target_ms > 0 ? " at p99 &le; " + ms(p.p99_target_ms) : "")}},
        {{"load per instance", significant_digits(p.per_instance_qps, 4) + " qps"}},
        {{"predicted utilisation", significant_digits(100 * p.utilisation) + "%"}},
        {{"predicted p50 / p99", ms(p.p50_ms) + " / " + ms(p.p99_ms)}},
        {{"threads per instance", std::to_string(p.threads_per_instance)}},
    };
    if (const auto& g = p.generative) {
      rows.insert(rows.begin() + 3, {{"generated tokens/s per instance", significant_digits(g->per_instance_tokens_per_s, 4) +
                                                                            " (capacity " +
                                                                            significant_digits(g->capacity_tokens_per_s, 4) + ")"}});
      rows.push_back({{"predicted TTFT p99 / ITL p99", ms(g->ttft_p99_ms) + " / " + ms(g->itl_p99_ms)}});
    }
    if (p.cost_per_hour > 0) {
      rows.push_back({{"cost per hour", "$" + significant_digits(p.cost_per_hour_total, 4) + " ($" + significant_digits(p.cost_per_hour, 4) +
                                            " per instance)"}});
      rows.push_back({{"cost per million inferences", "$" + significant_digits(p.cost_per_million, 4)}});
    } else {
      rows.push_back({{"cost", "<span class=\"note\">set --cost-per-hour</span>"}});
    }
    out += html_table({"", ""}, rows, "lr");
    if (!p.manifests.empty()) {
      out += "<p>Kubernetes manifests (Deployment, Service, HPA on the queue metric):</p><ul>";
      // plan lists the file names; they are in the folder the files list names "k8s".
      std::string dir;
      for (const NamedFile& f : files)
        if (f.what == "k8s") dir = f.path;
      if (!dir.empty() && dir.back() != '/') dir += '/';
      for (const std::string& m : p.manifests) out += "<li>" + link(dir + m) + "</li>";
      out += "</ul>";
    }
  }
  if (!files.empty()) {
    out += "<h3>Files written</h3><ul>";
    for (const NamedFile& f : files) out += "<li>" + html_escape(f.what) + ": " + link(f.path) + "</li>";
    out += "</ul>";
  }
  return out + "</section>";
}

}  // namespace fusor::report
