// Tuning: which batching setting per traffic class gives the most throughput within the class's
// SLO, and which fusion option per batch-size bucket is fastest among those that pass the
// precision gate (docs/tune.md). The result is a Config for fusor serve and a TunedRecord of
// every measurement (fusor/tuned_record.h), which fusor plan and the onboard report read.
//
//   fusor::tune::TuneOptions o;  o.request = engine.bind_dims({}, 1, 32);
//   o.goals = {fusor::tune::parse_slo("interactive:p99=20ms")};
//   fusor::tune::Progress progress;  std::atomic<bool> stop{false};
//   auto result = fusor::tune::tune(engine, o, progress, stop);
//
// Invariants:
// - Every capacity in the result was measured (open-loop load on the real serving batcher),
//   never predicted; the simulator only picks which settings to measure.
// - Only fusion options that pass the gate are timed; the gate's rollbacks stay applied.
// - Stopping early keeps what was measured: the result is the best found so far, and
//   record.interrupted says so.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/engine.h"
#include "fusor/tuned_record.h"

namespace fusor::tune {

// A recorded arrival trace (--trace): ascending arrival times in seconds, replayed at the rates
// tuning tries.
struct Trace {
  std::vector<double> times_s;
  double span_s() const { return times_s.empty() ? 0 : times_s.back() - times_s.front(); }
  double mean_rate() const;  // arrivals per second over the span
};

// Text, one arrival time in seconds per line (ascending; the first column of a CSV line is read;
// blank lines, '#' comments and a non-numeric header line are skipped). Throws fusor::Error
// "PATH:LINE: ..." on a bad line, fewer than 2 arrivals, or times that go backwards.
Trace load_trace(const std::string& path);

// Progress of long work (tuning) on stderr: on a terminal, one live line with a bar, the step
// and the elapsed time; elsewhere (logs, CI), only the milestone lines, so logs stay readable.
class Progress {
 public:
  Progress();  // live when stderr is a terminal
  // Fraction done (0..1) and what is happening now; redraws the live line.
  void update(double fraction, const std::string& status);
  // A line worth keeping (a result): printed above the live line, or alone in a log.
  void note(const std::string& line);
  void finish();  // ends the live line

 private:
  void draw();
  bool live_;
  double fraction_ = 0;
  std::string status_;
  std::chrono::steady_clock::time_point start_, drawn_;
  bool shown_ = false;
};

// Request lengths of the load (--lengths): uniform over [min, max] tokens; min == max: fixed.
struct LengthRange {
  int64_t min = 1, max = 1;
};
// "8-128" or "32" -> {8, 128} or {32, 32}; throws a one-line fusor::Error naming --lengths.
LengthRange parse_lengths(const std::string& text);

struct ClassGoal {
  std::string name;
  Slo slo;
};

// "interactive:p99=20ms", "batch:throughput", "batch:throughput,p99=2s"; for a generative model
// also "chat:ttft=500ms,itl=50ms" (p99 of the first token and of the gaps between tokens). A
// throughput class without p99= has no latency bound here (an encoder's tune gives it 2 s
// against unbounded queues). Throws fusor::Error.
ClassGoal parse_slo(const std::string& text);
// The classes onboard tunes for when none are given, as --slo texts: a decoder's interactive
// class is bounded by its first token and the gaps between tokens, an encoder's by the whole
// request; a batch class takes the rest.
std::vector<std::string> default_slos(bool generative);

struct TuneOptions {
  std::string model_path;
  std::map<std::string, Dims> request;  // one request's input dims (batch 1)
  Config base;                          // --config: fusion switches, serve defaults
  std::vector<ClassGoal> goals;
  double duration_s = 4;                // per measured point
  int threads = 1;                      // cores one instance uses
  std::optional<Trace> trace;           // replayed instead of Poisson arrivals
  std::string arrivals_name = "poisson";
  std::vector<double> windows_ms = {0, 1, 2, 5, 10, 20, 50};
  std::vector<int64_t> max_batches = {1, 2, 4, 8, 16, 32};
  // A model that packs (fusor/packed.h) is tuned by token budget: each class's max_batch_tokens
  // from these, its row limit the largest of max_batches.
  std::vector<int64_t> token_budgets = {256, 512, 1024, 2048, 4096};
  // --lengths: request lengths uniform over [min_length, max_length] tokens (0: the request's own).
  int64_t min_length = 0, max_length = 0;
  // A decoder (fusor/decoder.h is_decoder_export) is tuned by generation instead: requests are
  // prompts of min_length..max_length tokens (default: the request's seq) that each generate
  // output_tokens tokens, served by the continuous-batching scheduler; per class the grid of
  // step token budgets x running sequences x prefill chunks (0: the step's budget) is probed at
  // saturation and the best few measured under the class's SLO (docs/tune.md). The config's own
  // setting (serve.step_tokens, serve.max_sequences) is always in the grid.
  int64_t output_tokens = 64;
  std::vector<int64_t> step_tokens = {128, 256, 512};
  std::vector<int64_t> max_running = {4, 8, 16, 32};
  std::vector<int64_t> prefill_chunks = {64, 0};
  int measure_per_class = 3;            // settings measured per class, best predicted first
  bool baseline = true;
  std::string machine;                  // for the record
};

struct TuneResult {
  Config config;       // what fusor serve reads
  TunedRecord record;  // what was measured
};

// Throws fusor::Error when no option passes the gate or the model cannot run the request.
TuneResult tune(const Engine& engine, const TuneOptions& options, Progress& progress, const std::atomic<bool>& stop);

// JSON text of a record, one field per member of TunedRecord (the onboard document's "tuned").
std::string tuned_record_json_text(const TunedRecord& record);

// Latency statistics and durations as the tuner reads them.

double percentile(std::vector<double> values, double p);  // nearest-rank; 0 for no values
// "30ms", "0.03s", "30us", or a bare number of milliseconds -> milliseconds; nullopt when the
// text is not a positive finite duration.
std::optional<double> parse_duration_ms(const std::string& text);

}  // namespace fusor::tune
