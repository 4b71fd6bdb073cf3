// fusor tune: finds, per traffic class, the batching setting with the most throughput under the
// class's SLO, and per batch-size bucket the fastest fusion option that passes the gate.
//
// 1. Gate each fusion option (all, no-attention, none); time one batch per bucket size, option
//    and context layout on the real plans: this picks the config matrix.
// 2. Price every (window, max_batch, contexts) with the batcher model (simulate.h) on those
//    times, and keep the best few per class.
// 3. Measure those few for real: the serving batcher and session caches in this process, driven
//    by the open-loop generator (Poisson or a replayed trace) at a search of rates; the capacity
//    is the highest offered rate measured within the SLO. The default (no fusion, no reuse, no
//    batching) is measured the same way, as the baseline.
// Stopping early (the stop flag) keeps what was measured: the best so far is the result.
#pragma once
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/engine.h"
#include "tune/arrivals.h"
#include "tune/progress.h"
#include "tune/tuned_record.h"

namespace fusor::tune {

struct ClassGoal {
  std::string name;
  Slo slo;
};

// "interactive:p99=20ms", "batch:throughput", "batch:throughput,p99=2s"; throws fusor::Error.
ClassGoal parse_slo(const std::string& text);

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

}  // namespace fusor::tune
