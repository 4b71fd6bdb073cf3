// fusor tune: batching per traffic class and fusion per batch size, measured under each class's
// SLO; writes tuned.yaml, the config fusor serve reads with the measurements fusor plan reads
// (docs/tune.md). Ctrl-C stops early and still writes the best found so far (exit 130).
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <tuple>

#include "commands.h"
#include "fusor/error.h"
#include "fusor/profile.h"
#include "fusor/threads.h"
#include "model_args.h"
#include "tune_args.h"

namespace fusor::cli {
namespace {

std::atomic<bool> g_stop{false};

void on_interrupt(int) {
  g_stop.store(true);
  signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends it at once
}

}  // namespace

TuneArgs::TuneArgs() = default;

void TuneArgs::add_to(CLI::App& cmd) {
  model.add_to(cmd, {.batch = DimFlags::Batch::None, .seq_help = "Binds the non-batch symbolic dimensions of a request"});
  cmd.add_option("--slo", slos, "CLASS:p99=20ms, CLASS:ttft=500ms,itl=50ms (a decoder) or CLASS:throughput (repeatable)")
      ->required();
  // positive_number first: CLI::Range lets NaN through (every comparison with it is false), and a
  // NaN duration measured forever.
  cmd.add_option("--duration", duration_s, "Seconds per measured point")
      ->check(positive_number())
      ->check(CLI::Range(0.2, 3600.0));
  cmd.add_option("--trace", trace_path, "Replay this arrival trace (seconds, one per line) instead of Poisson arrivals");
  cmd.add_option("--windows", windows, "Batch windows to try, ms, e.g. 0,1,2,5,10,20,50");
  cmd.add_option("--max-batch", max_batches, "Max batch sizes to try, e.g. 1,2,4,8,16,32");
  cmd.add_option("--lengths", lengths, "Request lengths uniform over MIN-MAX tokens, e.g. 8-128 (mixed-length traffic)");
  cmd.add_option("--token-budgets", token_budgets,
                 "For a model that packs: max_batch_tokens to try per class, e.g. 256,512,1024,2048,4096");
  cmd.add_option("--output-tokens", output_tokens, "A decoder: tokens each request of the load generates")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd.add_option("--step-tokens", step_tokens, "A decoder: step token budgets to try, e.g. 128,256,512");
  cmd.add_option("--max-running", max_running, "A decoder: sequences running at once to try per class, e.g. 4,8,16");
  cmd.add_option("--prefill-chunks", prefill_chunks,
                 "A decoder: prompt tokens a class adds per step to try, e.g. 64,0 (0: the step's budget)");
  cmd.add_option("--measure", measure_per_class, "Settings measured per class (best predicted first)")
      ->check(CLI::Range(1, 20));
  cmd.add_flag("--no-baseline", no_baseline, "Skip measuring the default (no fusion, no reuse, no batching)");
}

tune::TuneOptions TuneArgs::options(const Engine& engine) const {
  tune::TuneOptions o;
  o.model_path = model.model;
  o.base = model.config;
  if (model.no_fusion) set_every_switch(o.base.fusion, false);
  if (model.no_mem_reuse) o.base.mem_reuse = false;
  o.request = bind_dims(engine, model.parsed_shapes(), 1, model.seq);
  for (const auto& s : slos) o.goals.push_back(tune::parse_slo(s));
  for (size_t i = 0; i < o.goals.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (o.goals[i].name == o.goals[j].name) throw Error("--slo: class '" + o.goals[i].name + "' is given twice");
  o.duration_s = duration_s;
  o.threads = model.threads > 0 ? model.threads : compute_threads();
  if (!trace_path.empty()) {
    o.trace = tune::load_trace(trace_path);
    o.arrivals_name = "trace:" + trace_path;
  }
  const bool decoder = is_decoder_export(engine, model.model);
  for (const auto& [flag, given, for_decoder] :
       {std::tuple{"--windows", !windows.empty(), false}, {"--max-batch", !max_batches.empty(), false},
        {"--token-budgets", !token_budgets.empty(), false}, {"--step-tokens", !step_tokens.empty(), true},
        {"--max-running", !max_running.empty(), true}, {"--prefill-chunks", !prefill_chunks.empty(), true}})
    if (given && decoder != for_decoder)
      throw Error(std::string(flag) + (decoder ? ": not for a decoder, which is tuned by --step-tokens, --max-running and --prefill-chunks"
                                               : ": only for a decoder (generation tuning)"));
  o.output_tokens = output_tokens;
  if (!step_tokens.empty()) o.step_tokens = parse_int_list(step_tokens, "--step-tokens");
  if (!max_running.empty()) o.max_running = parse_int_list(max_running, "--max-running");
  if (!prefill_chunks.empty()) {
    o.prefill_chunks.clear();
    for (const std::string& c : split_list(prefill_chunks))
      o.prefill_chunks.push_back(c == "0" ? 0 : parse_int_list(c, "--prefill-chunks").front());
  }
  if (!windows.empty()) {
    o.windows_ms.clear();
    for (const std::string& w : split_list(windows)) {
      try {
        size_t used = 0;
        double x = std::stod(w, &used);
        if (used != w.size() || !(x >= 0 && x <= 60000)) throw std::invalid_argument(w);  // NaN too
        o.windows_ms.push_back(x);
      } catch (const std::logic_error&) {
        throw Error("--windows: '" + windows + "' must be a comma-separated list of milliseconds >= 0");
      }
    }
  }
  if (!max_batches.empty()) {
    o.max_batches = parse_int_list(max_batches, "--max-batch");
    // The config's own bound on a class's max_batch: past it, tune timed ever larger batches.
    constexpr int64_t kMaxBatch = 1 << 20;
    for (int64_t b : o.max_batches)
      if (b > kMaxBatch)
        throw Error("--max-batch: " + std::to_string(b) + " is over " + std::to_string(kMaxBatch), ErrorKind::InvalidArgument);
  }
  if (!token_budgets.empty()) o.token_budgets = parse_int_list(token_budgets, "--token-budgets");
  if (!lengths.empty()) {
    const tune::LengthRange l = tune::parse_lengths(lengths);
    o.min_length = l.min, o.max_length = l.max;
  }
  o.measure_per_class = measure_per_class;
  o.baseline = !no_baseline;
  o.machine = cpu_model() + ", " + std::to_string(o.threads) + " thread(s)";
  return o;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = text.find(',', start)) != std::string::npos; start = end + 1) out.push_back(text.substr(start, end - start));
  out.push_back(text.substr(start));
  return out;
}

namespace {

// The default's row (`row` prints it) and how the tuned class of the same name compares.
template <class Row>
void add_baseline(std::string& out, const tune::TunedRecord& r, const Row& row, const char* measure) {
  if (!r.baseline) return;
  row("default", *r.baseline);
  if (r.baseline->capacity_qps > 0)
    if (const tune::ClassRecord* c = r.find(r.baseline->name)) {
      char line[160];
      std::snprintf(line, sizeof line, "tuned / default %s at the %s SLO: %.2fx\n", measure, c->name.c_str(),
                    c->capacity_qps / r.baseline->capacity_qps);
      out += line;
    }
}

// "p99<=5ms", "throughput", "throughput,ttft<=500ms,itl<=100ms": the targets a class's SLO sets.
std::string describe_slo(const tune::Slo& slo) {
  std::string out = slo.throughput ? "throughput" : "";
  auto add = [&](const char* name, double ms) {
    char term[64];
    std::snprintf(term, sizeof term, "%s%s<=%gms", out.empty() ? "" : ",", name, ms);
    if (ms > 0) out += term;
  };
  add("ttft", slo.ttft_p99_ms), add("itl", slo.itl_p99_ms);
  if (!slo.throughput) add("p99", slo.p99_ms);
  return out;
}

// A decoder's record: per class the chosen limits, capacity in requests and tokens per second,
// and the latencies at that capacity.
std::string generation_summary(const tune::TunedRecord& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %-22s %6s %8s %6s %9s %9s %9s %9s\n", "class", "slo", "step", "running", "chunk",
                "req/s", "tok/s", "TTFT p99", "ITL p99");
  out += line;
  auto row = [&](const std::string& label, const tune::ClassRecord& c) {
    const tune::Candidate* k = c.chosen_candidate();
    const tune::CurvePoint* at = k ? tune::capacity_point(k->curve, c.slo) : nullptr;
    const std::string slo = describe_slo(c.slo);
    std::snprintf(line, sizeof line, "%-12s %-22s %6lld %8lld %6s %9.2f %9.0f %9.0f %9.1f\n", label.c_str(), slo.c_str(),
                  static_cast<long long>(c.chosen.step_tokens), static_cast<long long>(c.chosen.max_running),
                  c.chosen.prefill_chunk > 0 ? std::to_string(c.chosen.prefill_chunk).c_str() : "step", c.capacity_qps,
                  c.capacity_tokens_per_s, at ? at->ttft_p99_ms : 0.0, at ? at->itl_p99_ms : 0.0);
    out += line;
  };
  for (const auto& c : r.classes) row(c.name, c);
  add_baseline(out, r, row, "capacity");
  std::snprintf(line, sizeof line, "(requests of %lld-%lld prompt tokens generating %lld each)\n",
                static_cast<long long>(r.min_length), static_cast<long long>(r.max_length),
                static_cast<long long>(r.output_tokens));
  return out + line;
}

// One line per class that no setting served within its SLO: the config it wrote is a best effort.
std::string unmet_slo_warnings(const tune::TunedRecord& r) {
  std::string out;
  char line[512];
  for (const tune::ClassRecord& c : r.classes) {
    if (c.capacity_qps > 0 || c.candidates.empty()) continue;
    const tune::Candidate* k = c.chosen_candidate();
    const double closest = k ? tune::closest_slo_load(*k, c.slo) : 0;
    std::snprintf(line, sizeof line,
                  "fusor tune: warning: class '%s': no setting met its SLO (%s) at any rate measured; the config "
                  "keeps the one that came closest",
                  c.name.c_str(), describe_slo(c.slo).c_str());
    out += line;
    if (std::isfinite(closest) && closest > 0) {
      std::snprintf(line, sizeof line, closest < 10 ? " (%.2fx its target)" : " (%.0fx its target)", closest);
      out += line;
    }
    if (r.baseline && r.baseline->name == c.name && r.baseline->capacity_qps > 0) {
      std::snprintf(line, sizeof line, "; the default (no fusion, no batching) met it up to %.1f/s",
                    r.baseline->capacity_qps);
      out += line;
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string tuned_summary(const tune::TunedRecord& r) {
  if (r.generative) return generation_summary(r);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %-10s %9s %9s %9s %11s %9s %9s\n", "class", "slo", "window", "max_batch", "contexts",
                "capacity/s", "p50 ms", "p99 ms");
  out += line;
  auto row = [&](const std::string& label, const tune::ClassRecord& c) {
    const tune::Candidate* k = c.chosen_candidate();
    const tune::CurvePoint* at = k ? tune::capacity_point(k->curve, c.slo) : nullptr;
    const std::string slo = describe_slo(c.slo);
    std::snprintf(line, sizeof line, "%-12s %-10s %9g %9lld %9lld %11.1f %9.2f %9.2f\n", label.c_str(), slo.c_str(),
                  c.chosen.batch_window_ms, static_cast<long long>(c.chosen.max_batch),
                  static_cast<long long>(c.chosen.execution_contexts), c.capacity_qps, at ? at->p50_ms : 0.0,
                  at ? at->p99_ms : 0.0);
    out += line;
  };
  for (const auto& c : r.classes) row(c.name, c);
  for (const auto& c : r.classes)  // a model that packs: the budget its batches fill to
    if (c.chosen.max_batch_tokens > 0) {
      std::snprintf(line, sizeof line, "%-12s packed: max_batch_tokens %lld\n", c.name.c_str(),
                    static_cast<long long>(c.chosen.max_batch_tokens));
      out += line;
    }
  add_baseline(out, r, row, "throughput");
  return out;
}

tune::TuneResult run_tune(const TuneArgs& a, const Engine& engine, tune::Progress& progress) {
  g_stop.store(false);
  signal(SIGINT, on_interrupt);
  tune::TuneOptions o = a.options(engine);
  auto result = tune::tune(engine, o, progress, g_stop);
  signal(SIGINT, SIG_DFL);
  return result;
}

void write_tuned(const std::string& path, const tune::TuneResult& r, const std::string& model_path) {
  std::ofstream f(path);
  if (!f) throw Error("cannot write " + path);
  f << tune::tuned_yaml(r.config, r.record,
                        "written by fusor tune for " + model_path +
                            std::string(r.record.interrupted ? " (interrupted: the best found so far)" : "") +
                            "\nfusor serve --config " + path + " serves with it; fusor plan --tuned " + path +
                            " plans capacity from it");
  if (!f) throw Error("cannot write " + path);
}

namespace {

void tune_command(const TuneArgs& a, const std::string& out_path) {
  // Fail on an unwritable output now, not after minutes of measuring (and create nothing yet).
  std::string parent = std::filesystem::path(out_path).parent_path().string();
  if (std::filesystem::is_directory(out_path) || access(parent.empty() ? "." : parent.c_str(), W_OK) != 0 ||
      (access(out_path.c_str(), F_OK) == 0 && access(out_path.c_str(), W_OK) != 0))
    throw Error("cannot write " + out_path);
  refuse_writing_over_model(out_path, a.model.model, "-o", {a.model.config_path});
  a.model.apply_threads();
  Engine engine = Engine::load(a.model.model);
  tune::Progress progress;
  tune::TuneResult r = run_tune(a, engine, progress);
  write_tuned(out_path, r, a.model.model);
  std::cout << tuned_summary(r.record);
  if (!r.record.interrupted) std::fputs(unmet_slo_warnings(r.record).c_str(), stderr);
  if (r.record.interrupted) {
    std::fprintf(stderr, "fusor tune: interrupted; wrote the best found so far to %s\n", out_path.c_str());
    throw ExitCode{130};
  }
  std::fprintf(stderr, "fusor tune: wrote %s\n", out_path.c_str());
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("tune", "Tune batch windows per traffic class and fusion per batch size under SLOs");
  args->add_to(*cmd);
  cmd->add_option("-o,--output", *out, "Where to write the tuned config (YAML)")->required();
  cmd->callback([args, out] { tune_command(*args, *out); });
}

}  // namespace fusor::cli
