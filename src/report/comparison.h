// Baseline vs tuned, one row per measure: the table the onboard report shows and fusor onboard
// prints. The baseline is the default setting (no fusion, no reuse, no batching) measured by
// fusor tune for the latency class; "tuned" is that class's chosen setting.
//
// Every latency figure is read at the capacity point of each curve (tune::capacity_point).
// Compute efficiency is the achieved rate at that point times the FLOPs of one inference,
// divided by the machine's compute peak; cost per million inferences is the cost of one
// instance-hour divided by the inferences it serves in that hour at capacity.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "fusor/tuned_record.h"

namespace fusor::report {

struct ComparisonInputs {
  double flops_per_inference = 0;  // one request's FLOPs (profile model_flops / batch); 0: unknown
  double peak_gflops = 0;          // the machine's compute ceiling (profile sgemm_gflops); 0: unknown
  double cost_per_hour = 0;        // one instance; 0: not given, or no plan
  bool planned = false;            // a capacity plan was made (the cost comes with it)
};

struct ComparisonRow {
  std::string measure;             // "throughput at the SLO"
  std::optional<double> baseline, tuned;  // in the row's unit; empty: not measured or not known
  std::string baseline_text, tuned_text;  // formatted with the unit, "-" when empty
  std::string change;              // "+22%", "-15%", "55% -> 80%"; "" when a side is empty
  bool improved = false;           // the tuned value is the better one
  std::string note;                // why a value is missing ("set --cost-per-hour")
};

struct Comparison {
  std::string class_name;          // the class compared, empty when the record has none
  double slo_p99_ms = 0;
  double throughput_ratio = 0;     // tuned / baseline capacity; 0 when either is unknown or 0
  std::vector<ComparisonRow> rows; // throughput, p50, p99, efficiency, utilisation, cost
  // A decoder's record: rows of tokens/s, TTFT and ITL p99 instead of compute efficiency, and a
  // baseline that is the config's own generation settings (fused), not the unfused default.
  bool generative = false;
  std::string note;                // set when there is nothing to compare (no baseline, no class)
};

// The class compared is the baseline's class (by name), else the first latency class, else the
// first class. Never throws: what is missing becomes an empty cell with a note.
Comparison compare_to_baseline(const tune::TunedRecord& record, const ComparisonInputs& inputs);

// A fixed-width text table of the rows, for a terminal.
std::string comparison_table(const Comparison& comparison);

}  // namespace fusor::report
