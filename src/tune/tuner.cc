#include "tune/tuner.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>

#include "fusor/check.h"
#include "fusor/decoder.h"
#include "fusor/error.h"
#include "serve/batch_assembly.h"
#include "serve/packed_cache.h"
#include "serve/signature.h"
#include "tune/arrivals.h"
#include "tune/capacity_search.h"
#include "tune/fusion_matrix.h"
#include "tune/generation_tuner.h"
#include "tune/load_bench.h"
#include "tune/service_times.h"
#include "tune/simulate.h"
#include "tune/token_sweep.h"

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
  if (s.max_batch_tokens > 0)
    return fmt("window %g ms, max batch tokens %g, max batch %g, %g context(s)", s.batch_window_ms,
               static_cast<double>(s.max_batch_tokens), static_cast<double>(s.max_batch),
               static_cast<double>(s.execution_contexts));
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

// Whether the class `name` of the config being tuned keeps the adaptive window (the default).
bool adaptive_window_of(const TuneOptions& o, const std::string& name) {
  auto it = o.base.serve.classes.find(name);
  return it == o.base.serve.classes.end() || it->second.adaptive_window;
}

// The first `n` of `ranked` with distinct max_batch (token budget, packed): measuring near-twins teaches nothing. One of
// them (of two or more) waits no window: the model is least sure of waits (it priced MiniLM's 50 ms window at
// 323 qps within a 100 ms p99, and the serving path held 21), so a no-wait setting is always
// measured too and the choice never rests on waits alone. When every setting is priced at 0, one
// is still measured.
std::vector<Priced> pick_distinct(const std::vector<Priced>& ranked, int n) {
  std::vector<Priced> out;
  for (const Priced& p : ranked) {
    if (static_cast<int>(out.size()) >= n || p.predicted_qps <= 0) break;
    if (std::none_of(out.begin(), out.end(), [&](const Priced& q) {
          return q.setting.max_batch == p.setting.max_batch && q.setting.max_batch_tokens == p.setting.max_batch_tokens;
        }))
      out.push_back(p);
  }
  auto no_wait = [](const Priced& p) { return p.setting.batch_window_ms == 0; };
  if (out.empty() && !ranked.empty()) {
    // Priced at 0: a lone request is predicted over the SLO whatever the setting. One that waits
    // no window comes closest; it is measured, so the class keeps a curve and tune's warning says
    // how far it is (plan then explains that no rate meets the SLO).
    auto first_no_wait = std::find_if(ranked.begin(), ranked.end(), no_wait);
    out.push_back(first_no_wait != ranked.end() ? *first_no_wait : ranked.front());
    return out;
  }
  if (out.size() >= 2 && std::none_of(out.begin(), out.end(), no_wait)) {
    auto best = std::find_if(ranked.begin(), ranked.end(), [&](const Priced& p) { return no_wait(p) && p.predicted_qps > 0; });
    if (best != ranked.end()) out.back() = *best;
  }
  return out;
}

std::vector<int64_t> buckets_up_to(int64_t max_rows) {
  std::vector<int64_t> rows;
  for (int64_t r = 1; r <= max_rows; r *= 2) rows.push_back(r);
  if (rows.back() != max_rows) rows.push_back(max_rows);
  return rows;
}

// What every step of one tuning run shares.
struct Run {
  Run(const Engine& engine, const TuneOptions& o, Progress& progress, const std::atomic<bool>& stop);

  const Engine& engine;
  const TuneOptions& o;
  Progress& progress;
  const std::atomic<bool>& stop;
  std::vector<int64_t> max_batches;    // {1} when the model has no batch axis
  std::vector<int64_t> rows;           // the batch-size buckets timed
  std::map<std::string, Dims> padded;  // one request, its sequence padded as the batcher pads it
  std::vector<Layout> layouts;         // one context with every thread; two with half each
  serve::Signature sig;
  std::optional<Lengths> lengths;      // --lengths
  Lengths load_lengths;                // what the load sends: --lengths, or the request's own length
  // Packed (the model packs): batches fill by tokens, and the budgets swept.
  std::optional<SessionOptions> packed;
  std::vector<int64_t> budgets;
  int64_t row_limit = 1;               // a packed batch's max_batch: the largest of max_batches
  ArrivalSource arrivals;              // Poisson, or the replayed trace
  double service_s = 0;                // estimated seconds to time every bucket on one plan
  double total_s = 0, done_s = 0;      // the progress bar's work estimate and work done, in seconds

  void status(const std::string& text) { progress.update(done_s / total_s, text); }
  void advance(double seconds, const std::string& text) {
    done_s += seconds;
    status(text);
  }
  size_t packed_points = 0;            // token counts timed per layout when packed
  bool complete(const ServiceTimes& t) const {
    return t.ms_by_rows.size() == (packed ? packed_points : rows.size()) && !t.ms_by_rows.empty();
  }
};

Run::Run(const Engine& engine, const TuneOptions& o, Progress& progress, const std::atomic<bool>& stop)
    : engine(engine), o(o), progress(progress), stop(stop), sig(serve::Signature::of(engine.inputs(), engine.outputs())) {
  max_batches = sig.batched ? o.max_batches : std::vector<int64_t>{1};
  // price() skips a window with a batch of one, which cannot grow: with only those left tune
  // measured nothing, reported capacity 0 at a window never asked for, and exited 0.
  if (*std::max_element(max_batches.begin(), max_batches.end()) == 1 &&
      std::none_of(o.windows_ms.begin(), o.windows_ms.end(), [](double w) { return w == 0; }))
    throw Error(std::string(sig.batched ? "--max-batch 1" : "a model without a batch axis (a max_batch of 1)") +
                    " takes no batch window: give a window of 0 in --windows" + (sig.batched ? ", or a --max-batch above 1" : ""),
                ErrorKind::InvalidArgument);
  rows = buckets_up_to(*std::max_element(max_batches.begin(), max_batches.end()));
  row_limit = rows.back();
  if (o.max_length > 0) {
    if (request_length(sig, o.request) == 0) throw Error("--lengths: the model has no sequence axis to vary");
    lengths = Lengths{o.min_length, o.max_length};
  }
  const int64_t own = std::max<int64_t>(1, request_length(sig, o.request));
  load_lengths = lengths ? *lengths : Lengths{own, own};
  // Sessions see batches padded as the batcher pads them: the sequence up to its bucket (with
  // mixed lengths, the longest's: the padded plans are timed at their slowest).
  padded = lengths ? with_length(sig, o.request, lengths->max) : o.request;
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (sig.input_has_seq[i] && padded.count(sig.inputs[i].name)) {
      Dims& d = padded[sig.inputs[i].name];
      if (d.size() > 1) d[1] = serve::padded_seq(d[1], o.base.serve.seq_bucket);
    }
  layouts = {{1, o.threads}};
  if (o.threads >= 2) layouts.push_back({2, o.threads / 2});
  arrivals = [&o](double rate, double duration, uint64_t seed) {
    return o.trace ? replay_arrivals(*o.trace, rate, duration) : poisson_arrivals(rate, duration, seed);
  };
  // Work estimate in seconds, for the bar: gating, timing, and every point the searches may measure.
  service_s = static_cast<double>(rows.size()) * (kServiceSecondsPerSize + 0.3);
  const double curves = static_cast<double>(o.goals.size()) * o.measure_per_class + (o.baseline ? 1 : 0);
  total_s = 3 * 5.0 + (3 + 1) * service_s + curves * kMaxSearchPoints * (o.duration_s + 0.5);
}

// The best-predicted settings of one layout for one class, best first: (window, max_batch), or
// for a model that packs (window, token budget) priced by the token batcher's model on the packed
// plan's times (`times` is then by tokens).
std::vector<Priced> price(const Run& run, const Slo& slo, const Layout& layout, const ServiceTimes& times,
                          bool adaptive_window) {
  std::vector<Priced> out;
  const bool packed = run.packed.has_value();
  for (int64_t b : packed ? run.budgets : run.max_batches)
    for (double w : run.o.windows_ms) {
      if (!packed && b == 1 && w > 0) continue;  // a window only delays a batch that cannot grow
      TrafficClass cls;
      cls.batch_window_ms = w;
      cls.adaptive_window = adaptive_window;
      if (packed) {
        cls.max_batch = run.row_limit;
        cls.max_batch_tokens = b;
        out.push_back({{w, run.row_limit, layout.contexts, b},
                       simulated_token_capacity(cls, layout.contexts, times, run.o.base.serve.token_bucket,
                                                run.load_lengths, slo.p99_ms)});
      } else {
        cls.max_batch = b;
        out.push_back({{w, b, layout.contexts}, simulated_capacity(cls, layout.contexts, times, slo.p99_ms)});
      }
    }
  std::stable_sort(out.begin(), out.end(), [](const Priced& a, const Priced& b) { return a.predicted_qps > b.predicted_qps; });
  return out;
}

// Whether the model is served packed with the gated options; if so, the budgets to sweep. Not
// packing is no error: the model is tuned by max_batch, as before.
void sweep_tokens_if_packed(Run& run, const SessionOptions& top) {
  std::string why_not;
  if (!serve::probe_packing(run.engine, run.o.base.serve, top, why_not)) {
    if (run.o.base.serve.packing) run.progress.note("tune: not packed (" + why_not + "): tuning max_batch");
    return;
  }
  run.packed = top;
  run.budgets = effective_token_budgets(run.o.token_budgets, run.row_limit, run.load_lengths.max);
  std::string list;
  for (int64_t b : run.budgets) list += (list.empty() ? "" : ",") + std::to_string(b);
  run.progress.note("tune: the model packs: batches fill by tokens; sweeping max_batch_tokens " + list +
                    fmt(" (max batch %g)", static_cast<double>(run.row_limit)));
}

// The packed plan's time per token count on each layout (ms by plan capacity).
std::vector<ServiceTimes> time_packed_layouts(Run& run) {
  std::vector<ServiceTimes> out(run.layouts.size());
  const int64_t most = std::max(run.budgets.back(), run.load_lengths.max);
  const std::vector<int64_t> points = packed_time_points(
      std::min(most, run.row_limit * run.load_lengths.max), run.o.base.serve.token_bucket);
  run.packed_points = points.size();
  for (size_t l = 0; l < run.layouts.size() && !run.stop.load(); ++l) {
    run.status(fmt("timing packed steps on %g context(s)", static_cast<double>(run.layouts[l].contexts)));
    out[l] = measure_packed_times(run.engine, run.sig, run.o.request, *run.packed, points, run.load_lengths, run.layouts[l],
                                  kServiceSecondsPerSize / 2, run.stop);
    std::string line = fmt("tune: packed step on %g context(s):", static_cast<double>(run.layouts[l].contexts));
    for (const auto& [tokens, ms] : out[l].ms_by_rows) line += fmt(" %g tokens %.2f ms;", static_cast<double>(tokens), ms);
    if (!run.stop.load()) run.progress.note(line);
  }
  return out;
}

// The fusion options that pass the precision gate, in fusion_options' order ("all" first). A gate
// that runs first runs at the request's dims: an audio model takes only its own lengths. Throws
// when none passes, saying whether the gate failed them or could not run at all (no verdict).
std::vector<FusionOption> gated_options(Run& run) {
  std::vector<FusionOption> options;
  std::string could_not_run;  // the reason, while no option has reached a verdict
  bool any_verdict = false;
  for (FusionOption option : fusion_options(run.o.base.fusion)) {
    if (run.stop.load()) break;
    run.status("gating fusion option " + option.name);
    const FusionConfig asked = option.fusion;
    try {
      apply_precision_verdict(run.engine, run.o.model_path, option.fusion, true, {}, run.o.request);
      options.push_back(option);
      any_verdict = true;
      run.progress.note("tune: fusion option " + option.name + ": passes the gate" +
                        (option.fusion.disabled.empty() ? ""
                                                        : fmt(" (%g item(s) rolled back)", option.fusion.disabled.size())));
    } catch (const Error& e) {
      const bool failed = load_verdict(run.o.model_path, asked).has_value();
      any_verdict = any_verdict || failed;
      if (!failed && could_not_run.empty()) could_not_run = e.what();
      run.progress.note("tune: fusion option " + option.name + (failed ? " dropped: " : " dropped, not gated: ") +
                        e.what());
    }
    run.advance(5, "gated " + option.name);
  }
  if (options.empty() && !run.stop.load())
    throw Error(any_verdict ? "no fusion option passes the precision gate"
                            : "no fusion option could be gated: " + could_not_run);
  return options;
}

// The gated options whose plans differ (service_times.h: distinct_plans), each repeat noted.
std::vector<FusionOption> distinct_options(Run& run, const std::vector<FusionOption>& gated,
                                           const SessionOptions& base_session) {
  if (run.stop.load() || gated.size() < 2) return gated;
  run.status("comparing the fusion options' plans");
  std::vector<std::pair<std::string, std::string>> repeats;
  std::vector<FusionOption> kept = distinct_plans(run.engine, run.padded, base_session, gated, repeats);
  for (const auto& [name, same_as] : repeats)
    run.progress.note("tune: fusion option " + name + ": the same plan as " + same_as + ", not timed");
  return kept;
}

// The options' times per bucket on one context, alternated in rounds (measure_rounds): each
// option gets about kServiceSecondsPerSize per bucket, as the bar's estimate assumes.
std::map<int64_t, RoundTimes> time_options(Run& run, const std::vector<FusionOption>& options,
                                           const SessionOptions& base_session) {
  std::map<int64_t, RoundTimes> by_rows;
  const double share = static_cast<double>(options.size()) * run.service_s / static_cast<double>(run.rows.size());
  for (int64_t r : run.rows) {
    if (run.stop.load()) break;
    run.status(fmt("timing batch %g: fusion options in alternated rounds", static_cast<double>(r)));
    RoundTimes t = measure_rounds(run.engine, run.padded, base_session, options, r, run.layouts[0].threads_per_context,
                                  kServiceSecondsPerSize, run.stop);
    if (!t.empty()) by_rows[r] = std::move(t);
    run.advance(share, fmt("timed batch %g", static_cast<double>(r)));
  }
  return by_rows;
}

// One line per bucket size: the option it runs, and every other option's rounds against `kept`.
void note_choice(Run& run, const MatrixChoice& choice, const std::string& kept) {
  for (const auto& [r, option] : choice.per_rows) {
    std::string line = fmt("tune: batch %g runs ", static_cast<double>(r)) + option->name;
    for (const MatrixTiming& m : choice.timings)
      if (m.rows == r && m.option != kept)
        line += "; " + m.option + fmt(" faster in %g/%g rounds, median %+.1f%% (noise %.1f%%)", static_cast<double>(m.wins),
                                      static_cast<double>(m.rounds), (m.ratio - 1) * 100, m.ratio_mad * 100);
    run.progress.note(line);
  }
}

// The chosen matrix's time per bucket on each layout; the first layout's is the chosen option's
// median over its rounds.
std::vector<ServiceTimes> time_layouts(Run& run, const MatrixChoice& choice, const serve::OptionsMatrix& matrix) {
  std::vector<ServiceTimes> layout_times(run.layouts.size());
  for (const MatrixTiming& m : choice.timings)
    if (m.chosen) layout_times[0].ms_by_rows[m.rows] = m.ms;
  for (size_t l = 1; l < run.layouts.size() && !run.stop.load(); ++l) {
    run.status(fmt("timing batches on %g contexts", static_cast<double>(run.layouts[l].contexts)));
    for (const auto& [r, option] : choice.per_rows) {
      ServiceTimes t = measure_service_times(run.engine, run.padded, matrix.for_rows(r), {r}, run.layouts[l],
                                             kServiceSecondsPerSize, run.stop);
      if (t.ms_by_rows.count(r)) layout_times[l].ms_by_rows[r] = t.ms_by_rows[r];
    }
    run.advance(run.service_s, "timed layouts");
  }
  return layout_times;
}

// The first latency class, else the first class: it picks the layout and is the baseline's class.
const ClassGoal& lead_goal(const std::vector<ClassGoal>& goals) {
  for (const ClassGoal& g : goals)
    if (!g.slo.throughput) return g;
  return goals.front();
}

// More contexts must price this much more capacity than one context with every thread to be
// chosen: one context answers a lone request on every thread, so at low load it is the fastest
// (MiniLM seq 32 served one at a time: 6 ms on 2 threads against 11 ms on one of 2 contexts).
constexpr double kMoreContextsGain = 1.25;

// The lead class's best predicted capacity on each layout (0 where it was not timed fully), and
// the layout chosen: the first (one context) unless another prices kMoreContextsGain times more.
size_t best_layout(const Run& run, const ClassGoal& lead, const std::vector<ServiceTimes>& layout_times,
                   std::vector<double>& predicted_qps) {
  predicted_qps.assign(run.layouts.size(), 0.0);
  for (size_t l = 0; l < run.layouts.size(); ++l) {
    if (!run.complete(layout_times[l])) continue;
    auto ranked = price(run, lead.slo, run.layouts[l], layout_times[l], adaptive_window_of(run.o, lead.name));
    if (!ranked.empty()) predicted_qps[l] = ranked.front().predicted_qps;
  }
  size_t best = 0;
  for (size_t l = 1; l < run.layouts.size(); ++l)
    if (predicted_qps[l] > kMoreContextsGain * predicted_qps[0] && predicted_qps[l] > predicted_qps[best]) best = l;
  return best;
}

// Seconds of the saturation probe before a setting's curve: a few hundred requests on a model of
// milliseconds, thousands on one of microseconds.
constexpr double kSaturationProbeSeconds = 0.3;

// One setting's curve on `bench`, the bar advancing with each point. The search starts below the
// probe's ceiling where the prediction is above it.
Candidate measure_curve(Run& run, LoadBench& bench, double predicted_qps, const std::string& label) {
  run.status(label + ": saturation probe");
  const double ceiling_qps = bench.saturated_qps(kSaturationProbeSeconds, run.stop);
  return search_capacity(
      [&](double rate, double duration_s, uint64_t seed) {
        return bench.measure(rate, duration_s, run.arrivals, seed, run.stop);
      },
      bench.setting(), bench.slo(), predicted_qps, ceiling_qps, run.o.duration_s, run.stop, [&](const CurvePoint& pt) {
        run.advance(run.o.duration_s + 0.5, label + fmt(" @ %.0f qps: p99 %.1f ms", pt.offered_qps, pt.p99_ms));
      });
}

// Prices every setting for the class on `layout`, measures the best few on the serving path and
// chooses the best measured; with nothing measured yet (stopped early), the best predicted.
ClassRecord measure_class(Run& run, const ClassGoal& goal, const ServeConfig& serve,
                          const std::shared_ptr<const serve::OptionsMatrix>& matrix, const Layout& layout,
                          const ServiceTimes& times) {
  ClassRecord cr;
  cr.name = goal.name;
  cr.slo = goal.slo;
  std::vector<Priced> picks;
  if (run.complete(times))
    picks = pick_distinct(price(run, goal.slo, layout, times, adaptive_window_of(run.o, goal.name)),
                          run.o.measure_per_class);
  for (const Priced& p : picks) {
    Candidate cand;
    if (!run.stop.load()) {
      run.status(goal.name + ": building sessions for " + describe(p.setting));
      LoadBench bench(run.engine, serve, matrix, layout, run.o.request, p.setting, adaptive_window_of(run.o, goal.name),
                      goal.slo, run.rows, {run.lengths, run.packed});
      const std::string label = goal.name + ": " + describe(p.setting);
      cand = measure_curve(run, bench, p.predicted_qps, label);
      run.progress.note("tune: " + label + fmt(": predicted %.0f qps, measured %.0f qps", p.predicted_qps, cand.capacity_qps));
    } else {
      cand.setting = p.setting;
      cand.predicted_qps = p.predicted_qps;
    }
    cr.candidates.push_back(cand);
  }
  cr.choose_best();
  return cr;
}

// The default (no fusion, no reuse, no batching) measured like a class under the lead class's SLO;
// empty when stopped before its curve was complete.
std::optional<ClassRecord> measure_baseline(Run& run, const ClassGoal& lead) {
  const TuneOptions& o = run.o;
  SessionOptions plain;
  plain.mem_reuse = false;
  plain.reorder = o.base.kernel.reorder_for_coalesce;
  plain.fusion.reset();
  ServeConfig serve = o.base.serve;
  serve.matrix.clear();
  auto plain_matrix = std::make_shared<const serve::OptionsMatrix>(serve::OptionsMatrix::of(serve, plain));
  run.status("baseline: timing the default plan");
  ServiceTimes t = measure_service_times(run.engine, run.padded, plain, {1}, {1, o.threads}, kServiceSecondsPerSize, run.stop);
  if (run.stop.load()) return std::nullopt;
  TrafficClass one;
  one.batch_window_ms = 0;
  one.max_batch = 1;
  const Setting s{0, 1, 1};
  LoadBench plain_bench(run.engine, serve, plain_matrix, {1, o.threads}, o.request, s, /*adaptive_window=*/true,
                        lead.slo, {1}, {run.lengths, std::nullopt});
  Candidate c = measure_curve(run, plain_bench, simulated_capacity(one, 1, t, lead.slo.p99_ms),
                              "baseline (no fusion, no reuse, no batching)");
  run.progress.note(fmt("tune: baseline: measured %.0f qps within p99 %.0f ms", c.capacity_qps, lead.slo.p99_ms));
  if (run.stop.load()) return std::nullopt;
  ClassRecord base;
  base.name = lead.name;
  base.slo = lead.slo;
  base.candidates.push_back(c);
  base.chosen = s;
  base.capacity_qps = c.capacity_qps;
  return base;
}

// The classes fusor serve reads: one per goal with its chosen batching (what else `config` gave a
// class, such as its timeout, stays), the lead class the default.
void serve_chosen_classes(Config& config, const TunedRecord& rec, const Layout& layout, const std::string& lead) {
  const std::map<std::string, TrafficClass> given = config.serve.classes;
  config.serve.execution_contexts = layout.contexts;
  config.serve.classes.clear();
  for (const ClassRecord& cr : rec.classes) {
    auto it = given.find(cr.name);
    TrafficClass t = it != given.end() ? it->second : TrafficClass{};
    t.batch_window_ms = cr.chosen.batch_window_ms;
    t.max_batch = cr.chosen.max_batch;
    if (cr.chosen.max_batch_tokens > 0) t.max_batch_tokens = cr.chosen.max_batch_tokens;
    t.preferred_batch_sizes.clear();
    t.priority = cr.slo.throughput ? 1 : 0;  // latency classes run first when both have a batch ready
    config.serve.classes[cr.name] = t;
  }
  config.serve.default_class = lead;
  config.batch_window_ms = config.serve.classes[lead].batch_window_ms;
}

}  // namespace

TunedRecord new_record(const TuneOptions& o) {
  TunedRecord rec;
  rec.model = o.model_path;
  rec.model_hash = model_file_hash(o.model_path);
  rec.machine = o.machine;
  rec.threads = o.threads;
  rec.request = o.request;
  rec.arrivals = o.arrivals_name;
  rec.duration_s = o.duration_s;
  return rec;
}

std::vector<std::string> default_slos(bool generative) {
  if (generative) return {"interactive:ttft=500ms,itl=100ms", "batch:throughput"};
  return {"interactive:p99=100ms", "batch:throughput"};
}

ClassGoal parse_slo(const std::string& text) {
  const std::string where = "--slo " + text;
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw Error(where + ": must look like CLASS:p99=20ms, CLASS:ttft=500ms,itl=50ms or CLASS:throughput");
  ClassGoal g;
  g.name = text.substr(0, colon);
  if (g.name.find_first_of(" \t,=") != std::string::npos) throw Error(where + ": bad class name '" + g.name + "'");
  std::string rest = text.substr(colon + 1);
  std::set<std::string> seen;  // a repeated term was overridden by the last without a word
  for (size_t start = 0; start <= rest.size();) {
    size_t end = rest.find(',', start);
    std::string term = rest.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!seen.insert(term.substr(0, term.find('='))).second)
      throw Error(where + ": '" + term.substr(0, term.find('=')) + "' is given twice");
    if (term == "throughput") g.slo.throughput = true;
    else if (term.rfind("p99=", 0) == 0) g.slo.p99_ms = parse_ms(term.substr(4), where);
    else if (term.rfind("ttft=", 0) == 0) g.slo.ttft_p99_ms = parse_ms(term.substr(5), where);
    else if (term.rfind("itl=", 0) == 0) g.slo.itl_p99_ms = parse_ms(term.substr(4), where);
    else throw Error(where + ": unknown term '" + term + "' (expected p99=, ttft=, itl=DURATION or throughput)");
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!g.slo.throughput && g.slo.p99_ms == 0 && g.slo.ttft_p99_ms == 0 && g.slo.itl_p99_ms == 0)
    throw Error(where + ": give p99=DURATION (ttft=, itl= for a generative model) or throughput");
  return g;
}

TuneResult tune(const Engine& engine, const TuneOptions& given, Progress& progress, const std::atomic<bool>& stop) {
  if (given.goals.empty()) throw Error("give at least one --slo CLASS:...");
  if (is_decoder_export(engine, given.model_path)) return tune_generation(engine, given, progress, stop);
  TuneOptions o = given;
  for (ClassGoal& g : o.goals) {
    if (g.slo.ttft_p99_ms > 0 || g.slo.itl_p99_ms > 0)
      throw Error("--slo " + g.name + ": ttft= and itl= are for generative models (a decoder); this model answers whole requests: use p99=");
    if (g.slo.p99_ms == 0) g.slo.p99_ms = kThroughputP99Ms;  // a throughput class without a bound
  }
  Run run(engine, o, progress, stop);
  TuneResult result;
  TunedRecord& rec = result.record = new_record(o);
  if (run.lengths) rec.min_length = run.lengths->min, rec.max_length = run.lengths->max;

  // 1. Gate the fusion options, time them per bucket size, and choose the config matrix.
  SessionOptions base_session;
  base_session.mem_reuse = o.base.mem_reuse;
  base_session.reorder = o.base.kernel.reorder_for_coalesce;
  const std::vector<FusionOption> options = distinct_options(run, gated_options(run), base_session);
  const MatrixChoice choice = choose_matrix(options, time_options(run, options, base_session), run.rows);
  if (!stop.load() && !options.empty()) note_choice(run, choice, options.front().name);
  rec.matrix = choice.timings;
  Config& config = result.config;
  config = o.base;
  config.serve.matrix = choice.entries();
  SessionOptions top = base_session;
  top.fusion = options.empty() ? o.base.fusion : options.front().fusion;  // "all", gated
  auto matrix = std::make_shared<const serve::OptionsMatrix>(serve::OptionsMatrix::of(config.serve, top));
  if (!stop.load() && !options.empty()) sweep_tokens_if_packed(run, top);
  rec.packed = run.packed.has_value();
  // A model that packs is served by tokens: its classes are priced on the packed plan's times.
  const std::vector<ServiceTimes> layout_times = run.packed ? time_packed_layouts(run) : time_layouts(run, choice, *matrix);

  // 2. Price every setting; the layout is the one the lead class prefers.
  const ClassGoal& lead = lead_goal(o.goals);
  std::vector<double> layout_qps;
  const size_t layout_index = best_layout(run, lead, layout_times, layout_qps);
  const Layout layout = run.layouts[layout_index];
  if (!stop.load()) {
    std::string priced;
    for (size_t l = 0; l < run.layouts.size(); ++l)
      priced += (l ? ", " : "") + fmt("%g x %g: %.0f qps", static_cast<double>(run.layouts[l].contexts),
                                      run.layouts[l].threads_per_context, layout_qps[l]);
    progress.note(fmt("tune: %g execution context(s) x %g thread(s)", static_cast<double>(layout.contexts),
                      layout.threads_per_context) +
                  " (" + lead.name + " predicted " + priced + ")" +
                  fmt("; matrix of %g row(s)", static_cast<double>(config.serve.matrix.size())));
  }

  // 3. Measure the best few per class on the serving path, and the baseline.
  for (const ClassGoal& g : o.goals)
    rec.classes.push_back(measure_class(run, g, config.serve, matrix, layout, layout_times[layout_index]));
  if (o.baseline && !stop.load()) rec.baseline = measure_baseline(run, lead);
  rec.interrupted = stop.load();

  serve_chosen_classes(config, rec, layout, lead.name);
  progress.finish();
  return result;
}

}  // namespace fusor::tune
