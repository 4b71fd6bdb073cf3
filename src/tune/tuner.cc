#include "tune/tuner.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "check/verdict.h"
#include "fusor/error.h"
#include "serve/batch_assembly.h"
#include "serve/signature.h"
#include "tune/duration.h"
#include "tune/fusion_matrix.h"
#include "tune/load_bench.h"
#include "tune/service_times.h"
#include "tune/simulate.h"

namespace fusor::tune {
namespace {

constexpr double kThroughputP99Ms = 2000;  // a throughput class's bound against unbounded queues
constexpr double kServiceSecondsPerSize = 0.4;

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

std::string describe(const Setting& s) {
  return fmt("window %g ms, max batch %g, %g context(s)", s.batch_window_ms, static_cast<double>(s.max_batch),
             static_cast<double>(s.execution_contexts));
}

double parse_ms(const std::string& text, const std::string& where) {
  auto ms = parse_duration_ms(text);
  if (!ms) throw Error(where + ": '" + text + "' must be a positive duration such as 20ms or 0.5s");
  return *ms;
}

struct Priced {
  Setting setting;
  double predicted_qps;
};

// The best-predicted settings of one layout for one class, best first.
std::vector<Priced> price(const TuneOptions& o, const Slo& slo, const Layout& layout, const ServiceTimes& times,
                          const std::vector<int64_t>& max_batches) {
  std::vector<Priced> out;
  for (int64_t b : max_batches)
    for (double w : o.windows_ms) {
      if (b == 1 && w > 0) continue;  // a window only delays a batch that cannot grow
      TrafficClass cls;
      cls.batch_window_ms = w;
      cls.max_batch = b;
      out.push_back({{w, b, layout.contexts}, simulated_capacity(cls, layout.contexts, times, slo.p99_ms)});
    }
  std::stable_sort(out.begin(), out.end(), [](const Priced& a, const Priced& b) { return a.predicted_qps > b.predicted_qps; });
  return out;
}

// The first `n` of `ranked` with distinct max_batch: measuring near-twins teaches nothing.
std::vector<Priced> pick_distinct(const std::vector<Priced>& ranked, int n) {
  std::vector<Priced> out;
  for (const Priced& p : ranked) {
    if (static_cast<int>(out.size()) >= n || p.predicted_qps <= 0) break;
    if (std::none_of(out.begin(), out.end(), [&](const Priced& q) { return q.setting.max_batch == p.setting.max_batch; }))
      out.push_back(p);
  }
  return out;
}

std::vector<int64_t> buckets_up_to(int64_t max_rows) {
  std::vector<int64_t> rows;
  for (int64_t r = 1; r <= max_rows; r *= 2) rows.push_back(r);
  if (rows.back() != max_rows) rows.push_back(max_rows);
  return rows;
}

}  // namespace

ClassGoal parse_slo(const std::string& text) {
  const std::string where = "--slo " + text;
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw Error(where + ": must look like CLASS:p99=20ms or CLASS:throughput");
  ClassGoal g;
  g.name = text.substr(0, colon);
  if (g.name.find_first_of(" \t,=") != std::string::npos) throw Error(where + ": bad class name '" + g.name + "'");
  bool has_p99 = false;
  std::string rest = text.substr(colon + 1);
  for (size_t start = 0; start <= rest.size();) {
    size_t end = rest.find(',', start);
    std::string term = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (term == "throughput") g.slo.throughput = true;
    else if (term.rfind("p99=", 0) == 0) g.slo.p99_ms = parse_ms(term.substr(4), where), has_p99 = true;
    else throw Error(where + ": unknown term '" + term + "' (expected p99=DURATION or throughput)");
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!has_p99 && !g.slo.throughput) throw Error(where + ": give p99=DURATION or throughput");
  if (!has_p99) g.slo.p99_ms = kThroughputP99Ms;
  return g;
}

TuneResult tune(const Engine& engine, const TuneOptions& o, Progress& progress, const std::atomic<bool>& stop) {
  if (o.goals.empty()) throw Error("give at least one --slo CLASS:...");
  const serve::Signature sig = serve::Signature::of(engine.inputs(), engine.outputs());
  std::vector<int64_t> max_batches = sig.batched ? o.max_batches : std::vector<int64_t>{1};
  const int64_t max_rows = *std::max_element(max_batches.begin(), max_batches.end());
  const std::vector<int64_t> rows = buckets_up_to(max_rows);
  // Sessions see batches padded as the batcher pads them: the sequence up to its bucket.
  std::map<std::string, Dims> padded = o.request;
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (sig.input_has_seq[i] && padded.count(sig.inputs[i].name)) {
      Dims& d = padded[sig.inputs[i].name];
      if (d.size() > 1) d[1] = serve::padded_seq(d[1], o.base.serve.seq_bucket);
    }
  std::vector<Layout> layouts = {{1, o.threads}};
  if (o.threads >= 2) layouts.push_back({2, o.threads / 2});

  // Work estimate in seconds, for the bar.
  const double service_s = static_cast<double>(rows.size()) * (kServiceSecondsPerSize + 0.3);
  const double total_s = 3 * 5.0 + (3 + 1) * service_s +
                         (static_cast<double>(o.goals.size()) * o.measure_per_class + (o.baseline ? 1 : 0)) *
                             kMaxSearchPoints * (o.duration_s + 0.5);
  double done_s = 0;
  auto advance = [&](double s, const std::string& status) {
    done_s += s;
    progress.update(done_s / total_s, status);
  };

  TuneResult result;
  TunedRecord& rec = result.record;
  rec.model = o.model_path;
  rec.model_hash = model_file_hash(o.model_path);
  rec.machine = o.machine;
  rec.threads = o.threads;
  rec.request = o.request;
  rec.arrivals = o.arrivals_name;
  rec.duration_s = o.duration_s;

  SessionOptions base_session;
  base_session.mem_reuse = o.base.mem_reuse;
  base_session.reorder = o.base.kernel.reorder_for_coalesce;

  // 1. Gate the fusion options, then time them per bucket size.
  std::vector<FusionOption> options;
  for (FusionOption option : fusion_options(o.base.fusion)) {
    if (stop.load()) break;
    progress.update(done_s / total_s, "gating fusion option " + option.name);
    try {
      apply_precision_verdict(engine, o.model_path, option.fusion, true);
      options.push_back(option);
      progress.note("tune: fusion option " + option.name + ": passes the gate" +
                    (option.fusion.disabled.empty() ? "" : fmt(" (%g item(s) rolled back)", option.fusion.disabled.size())));
    } catch (const Error& e) {
      progress.note("tune: fusion option " + option.name + " dropped: " + e.what());
    }
    advance(5, "gated " + option.name);
  }
  if (options.empty() && !stop.load()) throw Error("no fusion option passes the precision gate");

  // Two passes over the options, the better time of each kept: one hiccup (a co-tenant, a page
  // fault storm) must not hand a bucket to the wrong option.
  std::map<std::string, ServiceTimes> by_option;  // layout 1
  for (int pass = 0; pass < 2; ++pass)
    for (const FusionOption& option : options) {
      if (stop.load()) break;
      progress.update(done_s / total_s, "timing batches, fusion " + option.name);
      SessionOptions so = base_session;
      so.fusion = option.fusion;
      ServiceTimes t = measure_service_times(engine, padded, so, rows, layouts[0], kServiceSecondsPerSize / 2, stop);
      for (const auto& [r, ms] : t.ms_by_rows) {
        auto [it, fresh] = by_option[option.name].ms_by_rows.emplace(r, ms);
        if (!fresh) it->second = std::min(it->second, ms);
      }
      advance(service_s / 2, "timed " + option.name);
    }
  const MatrixChoice choice = choose_matrix(options, by_option, rows);
  rec.matrix = choice.timings;
  Config& config = result.config;
  config = o.base;
  config.serve.matrix = choice.entries();
  SessionOptions top = base_session;
  top.fusion = options.empty() ? o.base.fusion : options.front().fusion;  // "all", gated
  auto matrix = std::make_shared<const serve::OptionsMatrix>(serve::OptionsMatrix::of(config.serve, top));

  // Service times of the chosen matrix per layout (layout 1 straight from the table).
  std::vector<ServiceTimes> layout_times(layouts.size());
  for (const auto& [r, option] : choice.per_rows) layout_times[0].ms_by_rows[r] = by_option[option->name].ms_by_rows.at(r);
  for (size_t l = 1; l < layouts.size() && !stop.load(); ++l) {
    progress.update(done_s / total_s, fmt("timing batches on %g contexts", static_cast<double>(layouts[l].contexts)));
    for (const auto& [r, option] : choice.per_rows) {
      ServiceTimes t = measure_service_times(engine, padded, matrix->for_rows(r), {r}, layouts[l], kServiceSecondsPerSize, stop);
      if (t.ms_by_rows.count(r)) layout_times[l].ms_by_rows[r] = t.ms_by_rows[r];
    }
    advance(service_s, "timed layouts");
  }

  // 2. Price every setting; the layout is the one the first latency class prefers.
  const ClassGoal* lead = &o.goals.front();
  for (const ClassGoal& g : o.goals)
    if (!g.slo.throughput) {
      lead = &g;
      break;
    }
  size_t layout_index = 0;
  double lead_best = -1;
  for (size_t l = 0; l < layouts.size(); ++l) {
    if (layout_times[l].ms_by_rows.size() != rows.size()) continue;
    auto ranked = price(o, lead->slo, layouts[l], layout_times[l], max_batches);
    if (!ranked.empty() && ranked.front().predicted_qps > lead_best) lead_best = ranked.front().predicted_qps, layout_index = l;
  }
  const Layout layout = layouts[layout_index];
  if (!stop.load())
    progress.note(fmt("tune: %g execution context(s) x %g thread(s); matrix of %g row(s)", static_cast<double>(layout.contexts),
                      layout.threads_per_context, static_cast<double>(config.serve.matrix.size())));

  // 3. Measure the best few per class on the serving path, and the baseline.
  const ArrivalSource arrivals = [&](double rate, double duration, uint64_t seed) {
    return o.trace ? replay_arrivals(*o.trace, rate, duration) : poisson_arrivals(rate, duration, seed);
  };
  for (const ClassGoal& g : o.goals) {
    ClassRecord cr;
    cr.name = g.name;
    cr.slo = g.slo;
    std::vector<Priced> picks;
    if (layout_times[layout_index].ms_by_rows.size() == rows.size())
      picks = pick_distinct(price(o, g.slo, layout, layout_times[layout_index], max_batches), o.measure_per_class);
    for (const Priced& p : picks) {
      Candidate cand;
      if (!stop.load()) {
        progress.update(done_s / total_s, g.name + ": building sessions for " + describe(p.setting));
        LoadBench bench(engine, config.serve, matrix, layout, o.request, p.setting, g.slo, rows);
        const std::string label = g.name + ": " + describe(p.setting);
        cand = search_capacity(bench, p.predicted_qps, o.duration_s, arrivals, stop,
                               [&](const CurvePoint& pt) {
                                 advance(o.duration_s + 0.5, label + fmt(" @ %.0f qps: p99 %.1f ms", pt.offered_qps, pt.p99_ms));
                               });
        progress.note("tune: " + label + fmt(": predicted %.0f qps, measured %.0f qps", p.predicted_qps, cand.capacity_qps));
      } else {
        cand.setting = p.setting;
        cand.predicted_qps = p.predicted_qps;
      }
      cr.candidates.push_back(cand);
    }
    // The best measured; with nothing measured yet (stopped early), the best predicted.
    const Candidate* best = nullptr;
    for (const Candidate& c : cr.candidates)
      if (!best || c.capacity_qps > best->capacity_qps ||
          (c.capacity_qps == best->capacity_qps && c.predicted_qps > best->predicted_qps))
        best = &c;
    if (best) cr.chosen = best->setting, cr.capacity_qps = best->capacity_qps;
    rec.classes.push_back(cr);
  }

  if (o.baseline && !stop.load()) {
    SessionOptions plain;
    plain.mem_reuse = false;
    plain.reorder = o.base.kernel.reorder_for_coalesce;
    plain.fusion.reset();
    ServeConfig serve = o.base.serve;
    serve.matrix.clear();
    auto plain_matrix = std::make_shared<const serve::OptionsMatrix>(serve::OptionsMatrix::of(serve, plain));
    progress.update(done_s / total_s, "baseline: timing the default plan");
    ServiceTimes t = measure_service_times(engine, padded, plain, {1}, {1, o.threads}, kServiceSecondsPerSize, stop);
    TrafficClass one;
    one.batch_window_ms = 0;
    one.max_batch = 1;
    Setting s{0, 1, 1};
    ClassRecord base_rec;
    base_rec.name = lead->name;
    base_rec.slo = lead->slo;
    if (!stop.load()) {
      LoadBench plain_bench(engine, serve, plain_matrix, {1, o.threads}, o.request, s, lead->slo, {1});
      double predicted = simulated_capacity(one, 1, t, lead->slo.p99_ms);
      const std::string label = "baseline (no fusion, no reuse, no batching)";
      Candidate c = search_capacity(plain_bench, predicted, o.duration_s, arrivals, stop, [&](const CurvePoint& pt) {
        advance(o.duration_s + 0.5, label + fmt(" @ %.0f qps: p99 %.1f ms", pt.offered_qps, pt.p99_ms));
      });
      base_rec.candidates.push_back(c);
      base_rec.chosen = s;
      base_rec.capacity_qps = c.capacity_qps;
      progress.note(fmt("tune: baseline: measured %.0f qps within p99 %.0f ms", c.capacity_qps, lead->slo.p99_ms));
      if (!stop.load()) rec.baseline = base_rec;
    }
  }
  rec.interrupted = stop.load();

  // The config fusor serve reads: one class per goal with its chosen setting.
  config.serve.execution_contexts = layout.contexts;
  config.serve.classes.clear();
  for (const ClassRecord& cr : rec.classes) {
    auto given = o.base.serve.classes.find(cr.name);
    TrafficClass t = given != o.base.serve.classes.end() ? given->second : TrafficClass{};
    t.batch_window_ms = cr.chosen.batch_window_ms;
    t.max_batch = cr.chosen.max_batch;
    t.preferred_batch_sizes.clear();
    t.priority = cr.slo.throughput ? 1 : 0;  // latency classes run first when both have a batch ready
    config.serve.classes[cr.name] = t;
  }
  config.serve.default_class = lead->name;
  config.batch_window_ms = config.serve.classes[lead->name].batch_window_ms;
  progress.finish();
  return result;
}

}  // namespace fusor::tune
