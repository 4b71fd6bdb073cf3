// How long one batch takes, by batch size, fusion option and context layout: measured on the
// real plans, with every context of the layout running at once (they share the cores).
#pragma once
#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fusor/engine.h"
#include "tune/simulate.h"

namespace fusor::tune {

// A fusion choice the config matrix can give a batch-size bucket.
struct FusionOption {
  std::string name;  // all, no-attention, none
  FusionConfig fusion;
};
// `base` itself ("all"), base without attention fusion, and every pass off. Small batches and
// large ones can prefer different ones, which is what the matrix records.
std::vector<FusionOption> fusion_options(const FusionConfig& base);

// The options whose plans differ, in order, at `request`'s dims: an option whose plan has the same
// fusion items and kernels as an earlier one's ("no-attention" on a model without attention) is
// left out, and `repeats` gets its name and the kept option's. Timing a repeat would only measure
// noise between identical plans, and a bucket could pick one on it.
std::vector<FusionOption> distinct_plans(const Engine& engine, const std::map<std::string, Dims>& request,
                                         const SessionOptions& base, const std::vector<FusionOption>& options,
                                         std::vector<std::pair<std::string, std::string>>& repeats);

struct Layout {
  int64_t contexts = 1;
  int threads_per_context = 1;
};

// `request`: one request's input dims (batch axis 1, sequence already padded to its bucket).
// Each row count gets at least 3 timed runs and about `seconds` of them; the median counts.
ServiceTimes measure_service_times(const Engine& engine, const std::map<std::string, Dims>& request,
                                   const SessionOptions& options, const std::vector<int64_t>& rows, Layout layout,
                                   double seconds, const std::atomic<bool>& stop);

// Each fusion option's time in every round at one batch size: option name -> ms per round, the
// rounds aligned (round i of every option ran back to back, so a slow spell hits them alike).
using RoundTimes = std::map<std::string, std::vector<double>>;

// Times `options` against each other at `rows` rows on one context of `threads` threads: one
// session per option, built once, then rounds in rotating order (A B C, B C A, C A B, ...), each
// a short burst per option whose median is that option's time in the round. At least
// kMinRounds rounds, and more while the options have had under `seconds` each; a round cut
// short by `stop` is dropped.
inline constexpr int kMinRounds = 5;
inline constexpr int kTargetRounds = 8;  // a burst lasts about seconds / kTargetRounds, at least one run
RoundTimes measure_rounds(const Engine& engine, const std::map<std::string, Dims>& request, const SessionOptions& base,
                          const std::vector<FusionOption>& options, int64_t rows, int threads, double seconds,
                          const std::atomic<bool>& stop);

// `request` with dimension 0 of every input set to `rows`.
std::map<std::string, Dims> with_rows(const std::map<std::string, Dims>& request, int64_t rows);

}  // namespace fusor::tune
