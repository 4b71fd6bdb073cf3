#include "tune/generation_tuner.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <numeric>

#include "fusor/check.h"
#include "fusor/decoder.h"
#include "fusor/error.h"
#include "fusor/generate.h"
#include "tune/arrivals.h"
#include "tune/capacity_search.h"
#include "tune/generation_bench.h"
#include "tune/tuner.h"

namespace fusor::tune {
namespace {

__attribute__((format(printf, 1, 2))) std::string strf(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string describe(const Setting& s) {
  return strf("step %lld tokens, %lld running, prefill chunk ", static_cast<long long>(s.step_tokens),
              static_cast<long long>(s.max_running)) +
         (s.prefill_chunk > 0 ? std::to_string(s.prefill_chunk) : "= step");
}

std::string describe(const CurvePoint& p) {
  return strf("%.0f tok/s (%.2f req/s), TTFT p99 %.0f ms, ITL p99 %.1f ms", p.output_tokens_per_s, p.achieved_qps,
              p.ttft_p99_ms, p.itl_p99_ms);
}

// What every step of one tuning run shares.
struct Run {
  const Engine& engine;
  const TuneOptions& o;
  Progress& progress;
  const std::atomic<bool>& stop;
  SessionOptions session;
  GenerationLoad load;
  ArrivalSource arrivals;
  double total_s = 1, done_s = 0;  // the bar's work estimate and work done, in seconds

  void status(const std::string& text) { progress.update(std::min(1.0, done_s / total_s), text); }
  void advance(double seconds, const std::string& text) {
    done_s += seconds;
    status(text);
  }
  std::unique_ptr<GenerationBench> bench(const std::string& cls, const Setting& s, const Slo& slo) {
    return std::make_unique<GenerationBench>(engine, o.model_path, o.base.serve, session, o.threads, cls, s, slo, load);
  }
};

// Seconds of one probe and of one measured curve, for the bar (a model is built for each).
constexpr double kBuildS = 2;
double probe_s(const TuneOptions& o) { return o.duration_s + kBuildS; }
double curve_s(const TuneOptions& o) { return kMaxSearchPoints * 2.5 * o.duration_s + kBuildS; }

struct Probe {
  Setting setting;
  CurvePoint saturated;
  std::unique_ptr<GenerationBench> bench;
};

// The config's own generation settings (serve.step_tokens, serve.max_sequences, no chunk limit).
Setting default_setting(const TuneOptions& o) {
  Setting s;
  s.step_tokens = o.base.serve.step_tokens;
  s.max_running = o.base.serve.max_sequences;
  return s;
}

// The grid, with chunks at or above the step dropped (they prefill like 0: the step's budget),
// and the config's own setting: as it is for the lead class, so that tuning never chooses worse
// than what it was given; at the lead's step for the others (`steps` then holds just that).
std::vector<Setting> grid(const TuneOptions& o, const std::vector<int64_t>& steps, bool lead) {
  std::vector<Setting> out;
  auto add = [&](Setting s) {
    if (s.prefill_chunk >= s.step_tokens) s.prefill_chunk = 0;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (int64_t step : steps)
    for (int64_t running : o.max_running)
      for (int64_t chunk : o.prefill_chunks) {
        Setting s;
        s.step_tokens = step, s.max_running = running, s.prefill_chunk = chunk;
        add(s);
      }
  Setting given = default_setting(o);
  if (!lead) given.step_tokens = steps.front();
  add(given);
  return out;
}

// Best first: a latency class prefers settings whose saturated TTFT and ITL already hold its
// SLO (by tokens per second), then the ones that come closest; a throughput class, tokens per second.
void rank(std::vector<Probe>& probes, const Slo& slo) {
  std::stable_sort(probes.begin(), probes.end(), [&](const Probe& a, const Probe& b) {
    if (!slo.throughput) {
      const double la = slo_load(a.saturated, slo), lb = slo_load(b.saturated, slo);
      if ((la <= 1) != (lb <= 1)) return la <= 1;
      if (la > 1) return la < lb;
    }
    return a.saturated.output_tokens_per_s > b.saturated.output_tokens_per_s;
  });
}

Candidate measure_curve(Run& run, GenerationBench& bench, double predicted_qps, const std::string& label) {
  return search_capacity(
      [&](double rate, double duration_s, uint64_t seed) { return bench.measure(rate, duration_s, run.arrivals, seed, run.stop); },
      bench.setting(), bench.slo(), predicted_qps, 0, run.o.duration_s, run.stop, [&](const CurvePoint& p) {
        run.advance(curve_s(run.o) / kMaxSearchPoints,
                    label + strf(" @ %.2f req/s: TTFT p99 %.0f ms, ITL p99 %.1f ms", p.offered_qps, p.ttft_p99_ms, p.itl_p99_ms));
      });
}

void set_capacity_tokens(ClassRecord& cr) {
  const Candidate* k = cr.chosen_candidate();
  const CurvePoint* at = k && cr.capacity_qps > 0 ? capacity_point(k->curve, cr.slo) : nullptr;
  cr.capacity_tokens_per_s = at ? at->output_tokens_per_s : 0;
}

// The probes worth measuring, best first: the ranking's first `measure`, then, when missing, the
// one with the most tokens per second (a latency class's ranking trusts saturated latencies,
// which overstate what a cap on running sequences costs below saturation) and `also` (the
// config's own setting, for the lead class).
void keep_measured(std::vector<Probe>& probes, const Slo& slo, size_t measure, const std::optional<Setting>& also) {
  rank(probes, slo);
  auto most = std::max_element(probes.begin(), probes.end(), [](const Probe& a, const Probe& b) {
    return a.saturated.output_tokens_per_s < b.saturated.output_tokens_per_s;
  });
  std::vector<size_t> keep;
  for (size_t i = 0; i < probes.size() && i < measure; ++i) keep.push_back(i);
  auto add = [&](size_t i) {
    if (std::find(keep.begin(), keep.end(), i) == keep.end()) keep.push_back(i);
  };
  if (most != probes.end()) add(static_cast<size_t>(most - probes.begin()));
  if (also)
    for (size_t i = 0; i < probes.size(); ++i)
      if (probes[i].setting == *also) add(i);
  std::vector<Probe> kept;
  for (size_t i : keep) kept.push_back(std::move(probes[i]));
  probes = std::move(kept);  // frees the rest
}

// The lead class measures the config's own setting among its candidates, and copies that
// measurement into `baseline` when one is wanted.
ClassRecord tune_class(Run& run, const ClassGoal& goal, const std::vector<int64_t>& steps, bool lead,
                       std::optional<ClassRecord>* baseline) {
  ClassRecord cr;
  cr.name = goal.name;
  cr.slo = goal.slo;
  std::vector<Probe> probes;
  for (const Setting& s : grid(run.o, steps, lead)) {
    if (run.stop.load()) break;
    run.status(goal.name + ": probing " + describe(s));
    Probe p{s, {}, run.bench(goal.name, s, goal.slo)};
    p.saturated = p.bench->saturate(run.o.duration_s, run.stop);
    if (run.stop.load()) break;
    run.progress.note("tune: " + goal.name + ": " + describe(s) + ": saturated " + describe(p.saturated));
    run.advance(probe_s(run.o), goal.name + ": probed " + describe(s));
    probes.push_back(std::move(p));
  }
  const std::optional<Setting> given = lead ? std::optional(default_setting(run.o)) : std::nullopt;
  keep_measured(probes, goal.slo, static_cast<size_t>(run.o.measure_per_class), given);
  for (Probe& p : probes) {
    if (run.stop.load()) break;
    const std::string label = goal.name + ": " + describe(p.setting);
    Candidate c = measure_curve(run, *p.bench, p.saturated.achieved_qps, label);
    run.progress.note("tune: " + label + strf(": capacity %.2f req/s (saturated %.2f)", c.capacity_qps, p.saturated.achieved_qps));
    if (baseline && given && p.setting == *given && !run.stop.load()) {
      ClassRecord& base = baseline->emplace();
      base.name = goal.name;
      base.slo = goal.slo;
      base.chosen = p.setting;
      base.capacity_qps = c.capacity_qps;
      base.candidates.push_back(c);
      set_capacity_tokens(base);
    }
    cr.candidates.push_back(std::move(c));
    p.bench.reset();
  }
  cr.choose_best();
  set_capacity_tokens(cr);
  return cr;
}

// The config fusor serve reads: each class with its chosen limits and its SLO as targets.
void serve_chosen(Config& config, const TunedRecord& rec, const std::string& lead) {
  const std::map<std::string, TrafficClass> given = config.serve.classes;
  config.serve.classes.clear();
  int64_t running = 0;
  for (const ClassRecord& cr : rec.classes) {
    auto it = given.find(cr.name);
    TrafficClass t = it != given.end() ? it->second : TrafficClass{};
    t.max_running = cr.chosen.max_running;
    t.prefill_chunk = cr.chosen.prefill_chunk;
    t.ttft_target_ms = cr.slo.ttft_p99_ms;
    t.itl_target_ms = cr.slo.itl_p99_ms;
    t.priority = cr.slo.throughput ? 1 : 0;
    config.serve.classes[cr.name] = t;
    running += cr.chosen.max_running;
    if (cr.name == lead && cr.chosen.step_tokens > 0) config.serve.step_tokens = cr.chosen.step_tokens;
  }
  if (running > 0) config.serve.max_sequences = running;
  config.serve.default_class = lead;
}

void check_lists(const TuneOptions& o) {
  auto positive = [](const std::vector<int64_t>& v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; });
  };
  if (!positive(o.step_tokens)) throw Error("--step-tokens: give one or more positive token counts");
  if (!positive(o.max_running)) throw Error("--max-running: give one or more positive sequence counts");
  if (o.prefill_chunks.empty() || std::any_of(o.prefill_chunks.begin(), o.prefill_chunks.end(), [](int64_t x) { return x < 0; }))
    throw Error("--prefill-chunks: give one or more token counts >= 0 (0: the step's budget)");
  if (o.output_tokens < 1) throw Error("--output-tokens must be at least 1");
}

}  // namespace

TuneResult tune_generation(const Engine& engine, const TuneOptions& o, Progress& progress, const std::atomic<bool>& stop) {
  check_lists(o);
  for (const ClassGoal& g : o.goals)
    if (!g.slo.throughput && g.slo.ttft_p99_ms == 0 && g.slo.itl_p99_ms == 0 && g.slo.p99_ms == 0)
      throw Error("--slo " + g.name + ": give ttft=, itl= or p99= (or throughput)");
  Run run{engine, o, progress, stop, {}, {}, {}};
  run.session.mem_reuse = o.base.mem_reuse;
  run.session.reorder = o.base.kernel.reorder_for_coalesce;
  run.session.fusion = o.base.fusion;
  auto ids = o.request.find("input_ids");  // the prompt length --seq bound, unless --lengths
  const int64_t seq = ids != o.request.end() && ids->second.size() >= 2 ? ids->second[1] : 32;
  run.load.prompt = o.max_length > 0 ? Lengths{o.min_length, o.max_length} : Lengths{seq, seq};
  run.load.output_tokens = o.output_tokens;
  const DecoderSpec spec = DecoderSpec::describe(engine, o.model_path);
  if (context_room(run.load.prompt.max, spec.context_length) < o.output_tokens)
    throw Error("--lengths and --output-tokens: a request of " + std::to_string(run.load.prompt.max) + " + " +
                std::to_string(o.output_tokens) + " tokens exceeds the model's context of " +
                std::to_string(spec.context_length));
  run.arrivals = [&o](double rate, double duration, uint64_t seed) {
    return o.trace ? replay_arrivals(*o.trace, rate, duration) : poisson_arrivals(rate, duration, seed);
  };
  const size_t lead_grid = grid(o, o.step_tokens, true).size(), rest_grid = grid(o, {o.step_tokens.front()}, false).size();
  run.total_s = 5 + static_cast<double>(lead_grid + (o.goals.size() - 1) * rest_grid) * probe_s(o) +
                static_cast<double>(o.goals.size() * (o.measure_per_class + 1) + 1) * curve_s(o);

  TuneResult result;
  TunedRecord& rec = result.record = new_record(o);
  rec.generative = true;
  rec.output_tokens = o.output_tokens;
  rec.min_length = run.load.prompt.min, rec.max_length = run.load.prompt.max;

  // 1. The gate: the fused plan (with the paged KV cache's attention) must keep the numbers.
  run.status("gating the fusion config");
  apply_precision_verdict(engine, o.model_path, *run.session.fusion, true,
                          [&](const std::string& line) { progress.note("check: " + line); });
  run.advance(5, "gated");

  // 2-4. The lead class over the whole grid; the others with its step budget.
  std::vector<const ClassGoal*> order;
  for (const ClassGoal& g : o.goals)
    if (!g.slo.throughput) order.push_back(&g);
  for (const ClassGoal& g : o.goals)
    if (g.slo.throughput) order.push_back(&g);
  const ClassGoal& lead = *order.front();
  std::map<std::string, ClassRecord> tuned;
  std::vector<int64_t> steps = o.step_tokens;
  for (const ClassGoal* g : order) {
    ClassRecord cr = tune_class(run, *g, steps, g == &lead, o.baseline ? &rec.baseline : nullptr);
    if (g == &lead && cr.chosen.step_tokens > 0) {
      steps = {cr.chosen.step_tokens};
      progress.note(strf("tune: the step budget is %lld tokens (the %s class's choice) for every class",
                         static_cast<long long>(cr.chosen.step_tokens), lead.name.c_str()));
    }
    tuned[g->name] = std::move(cr);
  }
  for (const ClassGoal& g : o.goals) rec.classes.push_back(std::move(tuned[g.name]));  // --slo's order
  rec.interrupted = stop.load();

  result.config = o.base;
  result.config.fusion = *run.session.fusion;  // the gate's rollbacks stay applied
  serve_chosen(result.config, rec, lead.name);
  progress.finish();
  return result;
}

}  // namespace fusor::tune
