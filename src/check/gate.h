// The precision gate: every fusion item of the optimized plan is checked against what the model
// computes without it, and reverted when it is wrong.
//
// Three plans run the same samples: optimized (the plan being checked), native (every fusion off)
// and truth (reference kernels, float64 accumulation). The tiers:
//   1. each item's outputs against its own unfused body run on the very same boundary inputs,
//      captured inside the optimized run by an executor observer (the plan is not changed);
//   2. each item's outputs against the same values of whole-model native and truth runs: the
//      block and layer outputs, with the drift accumulated before them;
//   3. the model's outputs end to end;
//   4. edge-case inputs (padding, fully masked rows, huge, tiny, zero, negative, denormal values).
// An item fails when it differs from native beyond the tolerance AND is further from the truth
// than native is by more than the margin; a NaN/Inf that only one side has always fails. Failing
// items are rolled back (added to fusion.disabled) and the plan is rebuilt and checked again until
// it is clean.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "check/compare.h"
#include "check/item_status.h"
#include "fusor/error.h"
#include "fusor/engine.h"

namespace fusor {

struct CheckOptions {
  PrecisionCheck mode = PrecisionCheck::Strict;
  FusionConfig fusion;                    // the switches of the plan being checked
  std::map<std::string, Dims> dims;       // bound input shapes
  std::vector<std::map<std::string, Tensor>> samples;  // empty: generated (see gate.cc)
  bool edge_cases = true;                 // add tier-4 edge-case samples
  // Fused is "further from the truth" when its error exceeds native's by this factor, plus atol/10
  // and 16 ULP of the output's largest magnitude (order-of-summation noise).
  double margin = 1.25;
  std::string inject_fault;               // "KIND[@item]", empty for none
  // Other input shapes to check the settled plan at (sequence length 1, the largest batch).
  std::vector<std::map<std::string, Dims>> edge_dims;
  // Per model output, a tolerance other than the mode's (tiers 3 and 4).
  std::map<std::string, Tolerance> output_tolerances;
  int max_rounds = 8;
  std::function<void(const std::string&)> progress;
};

struct ItemVerdict {
  std::string name, kind;
  int tier = 1;                 // the tier that decided the verdict
  std::string sample;           // the sample it was decided on
  Difference vs_native;         // fused against the unfused body
  double native_vs_truth = 0;   // max abs error of native against the truth
  double fused_vs_truth = 0;    // max abs error of fused against the truth
  double threshold = 0;         // atol + rtol * |native| at the worst element
  ItemStatus status = ItemStatus::Kept;       // ItemStatus::Kept or ItemStatus::RolledBack
  int round = 0;                // the gate round that decided it
};

struct OutputVerdict {
  std::string name, sample;
  Difference vs_native, vs_truth, native_vs_truth;
  bool passed = true;
};

struct CheckReport {
  bool passed = false;
  std::string mode;
  std::vector<ItemVerdict> items;
  std::vector<std::string> rolled_back;
  std::vector<OutputVerdict> outputs;  // tier 3/4 of the final plan
  std::vector<std::string> samples;    // sample names, in order
  std::string injected_into;           // the item a fault went into, if any
  int rounds = 0;
  FusionConfig final_fusion;           // the checked config with the rollbacks in fusion.disabled
};

CheckReport run_precision_gate(const Engine& engine, const CheckOptions& options);

std::string check_report_json(const CheckReport& report);
std::string check_report_junit(const CheckReport& report);

}  // namespace fusor
