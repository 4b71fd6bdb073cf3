// fusor profile: where one inference spends its time, per kernel and per op, against the
// machine's measured ceilings; a Chrome trace with --trace, the full report with --json.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "commands.h"
#include "fusor/profile.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct ProfileArgs {
  ModelArgs model;
  std::string runs = "10";
  int warmup = 2;
  size_t top = 15;
  std::string trace_path, json_path, cache_dir;
  bool remeasure = false, quick = false, by_shape = false;
};

std::optional<std::ofstream> open_output(const std::string& path, const std::string& what) {
  if (path.empty()) return std::nullopt;
  std::ofstream f(path);
  if (!f) throw Error("cannot write " + what + " file '" + path + "'");
  return f;
}

void profile(const ProfileArgs& a) {
  const int64_t batch = a.model.batch(), seq = a.model.seq;
  const int64_t asked_runs = one_positive(a.runs, "--runs");
  constexpr int64_t kMaxRuns = 1000000;  // an int: 2^32 + 1 ran once
  if (asked_runs > kMaxRuns)
    throw Error("--runs: " + std::to_string(asked_runs) + " is over " + std::to_string(kMaxRuns), ErrorKind::InvalidArgument);
  const int runs = static_cast<int>(asked_runs);
  for (const auto& [path, flag] : {std::pair{a.trace_path, "--trace"}, std::pair{a.json_path, "--json"}})
    if (!path.empty()) refuse_writing_over_model(path, a.model.model, flag, {a.model.config_path});
  a.model.apply_threads();
  Engine engine = Engine::load(a.model.model);
  auto dims = bind_dims(engine, a.model.parsed_shapes(), batch, seq);
  // Opened before the work, so a bad path fails in a second, not after the measurements.
  auto trace_file = open_output(a.trace_path, "trace");
  auto json_file = open_output(a.json_path, "JSON");

  CeilingOptions co;
  co.remeasure = a.remeasure;
  co.quick = a.quick;
  co.cache_dir = a.cache_dir;
  co.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  Ceilings ceilings = machine_ceilings(co);

  ProfileOptions po;
  po.model = a.model.model;
  po.batch = batch;
  po.seq = has_symbolic_length(engine) ? seq : 0;  // an image model has no length to report
  po.runs = runs;
  po.warmup = a.warmup;
  po.by_shape = a.by_shape;
  po.session = a.model.session_options(engine, a.model.model);
  std::fprintf(stderr, "profiling: %d warm-up + %d runs...\n", po.warmup, po.runs);
  ProfileReport report = at_default_dims_explained(engine, a.model, [&] { return profile_model(engine, dims, po, ceilings); });

  std::cout << profile_table(report, a.top);
  if (trace_file) {
    *trace_file << chrome_trace_json(report);
    if (!*trace_file) throw Error("cannot write trace file '" + a.trace_path + "'");
  }
  if (json_file) {
    *json_file << profile_json(report);
    if (!*json_file) throw Error("cannot write JSON file '" + a.json_path + "'");
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "Time per kernel and per op against the machine's ceilings");
  args->model.add_to(*cmd);
  cmd->add_option("--runs", args->runs, "Profiled runs (times are medians over them)");
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(non_negative_number());
  cmd->add_option("--top", args->top, "Kernels shown in the table");
  cmd->add_flag("--by-shape", args->by_shape, "Split kernel rows by their bound input and output shapes");
  cmd->add_option("--trace", args->trace_path, "Write a Chrome trace (Perfetto, chrome://tracing)");
  cmd->add_option("--json", args->json_path, "Write the report as JSON")->check(writable_file());
  cmd->add_flag("--remeasure", args->remeasure, "Measure the machine ceilings again and refresh the cache");
  cmd->add_flag("--quick", args->quick, "Measure ceilings with small arrays and matrices (fast, less exact)");
  cmd->add_option("--cache-dir", args->cache_dir,
                  "Where ceilings.json is cached (default $FUSOR_CACHE_DIR, $XDG_CACHE_HOME/fusor, ~/.cache/fusor)");
  cmd->callback([args] { profile(*args); });
}

}  // namespace fusor::cli
