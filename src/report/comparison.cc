#include "report/comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/number_text.h"

namespace fusor::report {

using tune::Candidate;
using tune::ClassRecord;
using tune::CurvePoint;
using tune::TunedRecord;

namespace {

enum class Better { Higher, Lower };

std::string percent_change(double before, double after) {
  const double pct = 100 * (after / before - 1);
  return (pct >= 0 ? "+" : "") + fixed_decimals(pct, std::fabs(pct) >= 10 ? 0 : 1) + "%";
}

std::string percent(double fraction) {
  const double pct = 100 * fraction;
  return significant_digits(pct, pct >= 10 ? 3 : 2) + "%";
}

ComparisonRow make_row(std::string measure, std::optional<double> baseline, std::optional<double> tuned, Better better,
                       const auto& format) {
  ComparisonRow r;
  r.measure = std::move(measure);
  r.baseline = baseline;
  r.tuned = tuned;
  r.baseline_text = baseline ? format(*baseline) : "-";
  r.tuned_text = tuned ? format(*tuned) : "-";
  if (baseline && tuned) {
    r.improved = better == Better::Higher ? *tuned > *baseline : *tuned < *baseline;
    if (*baseline > 0) r.change = percent_change(*baseline, *tuned);
  }
  return r;
}

const Candidate* chosen_or_first(const ClassRecord& c) {
  if (const Candidate* k = c.chosen_candidate()) return k;
  return c.candidates.empty() ? nullptr : &c.candidates.front();
}

// The figures of one side at its capacity point.
struct Side {
  std::optional<double> capacity, p50, p99, efficiency, utilisation, cost_per_million;
  std::optional<double> tokens_per_s, ttft_p99, itl_p99;  // a generative record's
};

Side side_of(const ClassRecord& c, const ComparisonInputs& in) {
  Side s;
  s.capacity = c.capacity_qps;
  const Candidate* k = c.capacity_qps > 0 ? chosen_or_first(c) : nullptr;  // no capacity: nothing "at capacity"
  if (const CurvePoint* p = k ? tune::capacity_point(k->curve, c.slo) : nullptr) {
    s.p50 = p->p50_ms;
    s.p99 = p->p99_ms;
    s.utilisation = p->utilisation;
    if (p->ttft_p99_ms > 0) s.tokens_per_s = p->output_tokens_per_s, s.ttft_p99 = p->ttft_p99_ms, s.itl_p99 = p->itl_p99_ms;
    if (in.flops_per_inference > 0 && in.peak_gflops > 0)
      s.efficiency = p->achieved_qps * in.flops_per_inference / 1e9 / in.peak_gflops;
  }
  if (in.cost_per_hour > 0 && c.capacity_qps > 0) s.cost_per_million = in.cost_per_hour / (c.capacity_qps * 3600) * 1e6;
  return s;
}

const ClassRecord* compared_class(const TunedRecord& r) {
  if (r.baseline)
    if (const ClassRecord* c = r.find(r.baseline->name)) return c;
  for (const ClassRecord& c : r.classes)
    if (!c.slo.throughput) return &c;
  return r.classes.empty() ? nullptr : &r.classes.front();
}

}  // namespace

Comparison compare_to_baseline(const TunedRecord& record, const ComparisonInputs& in) {
  Comparison out;
  const ClassRecord* tuned_class = compared_class(record);
  if (!tuned_class) {
    out.note = "no class was tuned";
    return out;
  }
  out.class_name = tuned_class->name;
  out.slo_p99_ms = tuned_class->slo.p99_ms;
  const Side t = side_of(*tuned_class, in);
  const Side b = record.baseline ? side_of(*record.baseline, in) : Side{};
  if (!record.baseline) out.note = "no baseline was measured";
  if (record.baseline && record.baseline->capacity_qps > 0 && tuned_class->capacity_qps > 0)
    out.throughput_ratio = tuned_class->capacity_qps / record.baseline->capacity_qps;

  auto qps = [](double v) { return significant_digits(v, 4) + " qps"; };
  auto ms = [](double v) { return significant_digits(v, 3) + " ms"; };
  auto dollars = [](double v) { return "$" + significant_digits(v, 3); };
  out.rows.push_back(make_row("throughput at the SLO", b.capacity, t.capacity, Better::Higher, qps));
  if (out.throughput_ratio > 0) out.rows.back().change += " (" + fixed_decimals(out.throughput_ratio, 2) + "x)";
  out.generative = record.generative;
  if (record.generative) {
    // A request is a whole generation: its latency is the first token's and the gaps', and the
    // profile's FLOPs (one forward pass at the profiled shape) are not a request's.
    out.rows.push_back(make_row("generated tokens/s at the SLO", b.tokens_per_s, t.tokens_per_s, Better::Higher,
                                [](double v) { return significant_digits(v, 4) + " tok/s"; }));
    out.rows.push_back(make_row("TTFT p99 at capacity", b.ttft_p99, t.ttft_p99, Better::Lower, ms));
    out.rows.push_back(make_row("ITL p99 at capacity", b.itl_p99, t.itl_p99, Better::Lower, ms));
  }
  out.rows.push_back(make_row("p50 at capacity", b.p50, t.p50, Better::Lower, ms));
  out.rows.push_back(make_row("p99 at capacity", b.p99, t.p99, Better::Lower, ms));
  if (!record.generative) {
    out.rows.push_back(make_row("compute efficiency", b.efficiency, t.efficiency, Better::Higher, percent));
    if (!in.flops_per_inference || !in.peak_gflops) out.rows.back().note = "needs the profile's FLOPs and compute peak";
  }
  out.rows.push_back(make_row("utilisation at capacity", b.utilisation, t.utilisation, Better::Higher, percent));
  if (b.utilisation && t.utilisation) out.rows.back().change = percent(*b.utilisation) + " -> " + percent(*t.utilisation);
  out.rows.push_back(make_row("cost per million inferences", b.cost_per_million, t.cost_per_million, Better::Lower, dollars));
  if (in.cost_per_hour <= 0) out.rows.back().note = in.planned ? "set --cost-per-hour" : "no capacity plan was made";
  return out;
}

std::string comparison_table(const Comparison& c) {
  if (c.class_name.empty()) return "baseline vs tuned: " + c.note + "\n";
  std::string out = "Baseline vs tuned, class " + c.class_name +
                    (c.slo_p99_ms > 0 ? " (p99 <= " + significant_digits(c.slo_p99_ms) + " ms)" : "") + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-28s %14s %14s  %s\n", "", "baseline", "tuned", "change");
  out += line;
  for (const ComparisonRow& r : c.rows) {
    std::string change = r.change.empty() ? r.note : r.change + (r.note.empty() ? "" : "  (" + r.note + ")");
    std::snprintf(line, sizeof line, "  %-28s %14s %14s  %s\n", r.measure.c_str(), r.baseline_text.c_str(),
                  r.tuned_text.c_str(), change.c_str());
    out += line;
  }
  if (!c.note.empty()) out += "  " + c.note + "\n";
  return out;
}

}  // namespace fusor::report
