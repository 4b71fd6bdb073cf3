// The options of fusor tune, shared with fusor onboard (which runs the same tuning step).
#pragma once
#include <string>
#include <vector>

#include "fusor/tune.h"
#include "model_args.h"

namespace fusor::cli {

struct TuneArgs {
  TuneArgs();
  ModelArgs model;
  std::vector<std::string> slos;
  double duration_s = 4;
  std::string trace_path, windows, max_batches, lengths, token_budgets;
  // A decoder's grid (generation tuning); empty: TuneOptions' defaults.
  std::string step_tokens, max_running, prefill_chunks;
  int64_t output_tokens = 64;
  int measure_per_class = 3;
  bool no_baseline = false;

  // Registers the options (the model positional, --config, --slo, ...) on `cmd`.
  void add_to(CLI::App& cmd);
  tune::TuneOptions options(const Engine& engine) const;
};

// Runs the tuner with Ctrl-C as its stop flag (a second Ctrl-C kills).
tune::TuneResult run_tune(const TuneArgs& args, const Engine& engine, tune::Progress& progress);
void write_tuned(const std::string& path, const tune::TuneResult& result, const std::string& model_path);
// The chosen setting, capacity and latencies per class, the default's, and the ratio.
std::string tuned_summary(const tune::TunedRecord& record);
std::vector<std::string> split_list(const std::string& text);  // "a,b" -> {a, b}

}  // namespace fusor::cli
