// How long one batch takes, by batch size, fusion option and context layout: measured on the
// real plans, with every context of the layout running at once (they share the cores).
#pragma once
#include <atomic>
#include <map>
#include <string>
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

struct Layout {
  int64_t contexts = 1;
  int threads_per_context = 1;
};

// `request`: one request's input dims (batch axis 1, sequence already padded to its bucket).
// Each row count gets at least 3 timed runs and about `seconds` of them; the median counts.
ServiceTimes measure_service_times(const Engine& engine, const std::map<std::string, Dims>& request,
                                   const SessionOptions& options, const std::vector<int64_t>& rows, Layout layout,
                                   double seconds, const std::atomic<bool>& stop);

// `request` with dimension 0 of every input set to `rows`.
std::map<std::string, Dims> with_rows(const std::map<std::string, Dims>& request, int64_t rows);

}  // namespace fusor::tune
