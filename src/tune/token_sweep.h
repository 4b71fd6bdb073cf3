// Tuning a model that packs (fusor/packed.h): its batches fill by real tokens, so fusor tune
// sweeps each class's token budget (serve.classes.NAME.max_batch_tokens) where it sweeps
// max_batch for other models. A budget is priced by a model of the token batcher (the batcher's
// own close rule, serve/batcher.h) fed the load's request lengths and the packed plan's measured
// time per token count, so only the best few budgets are measured for real.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/engine.h"
#include "fusor/tune.h"
#include "serve/signature.h"
#include "tune/service_times.h"
#include "tune/simulate.h"

namespace fusor::tune {

// Request lengths of the load (parse_lengths reads --lengths: fusor/tune.h).
using Lengths = LengthRange;

// Draws lengths from a fixed seed, so every run of a setting sees the same mix.
class LengthDraw {
 public:
  LengthDraw(Lengths lengths, uint64_t seed) : lengths_(lengths), rng_(seed) {}
  int64_t next() { return std::uniform_int_distribution<int64_t>(lengths_.min, lengths_.max)(rng_); }

 private:
  Lengths lengths_;
  std::mt19937_64 rng_;
};

// `request` (one request's dims) with every sequence input's axis 1 set to `length`.
std::map<std::string, Dims> with_length(const serve::Signature& sig, const std::map<std::string, Dims>& request,
                                        int64_t length);
// The sequence length of `request` (axis 1 of its first sequence input), 0 when none has one.
int64_t request_length(const serve::Signature& sig, const std::map<std::string, Dims>& request);

// The budgets worth sweeping, ascending: a batch can never hold more than max_rows requests of
// max_length tokens, so budgets at or above that cap all behave alike and only the smallest of
// them is kept. Budgets below 1 are dropped.
std::vector<int64_t> effective_token_budgets(std::vector<int64_t> budgets, int64_t max_rows, int64_t max_length);

// The token counts whose packed step is timed for the model: the plan capacities (as the serving
// cache rounds them, serve::packed_capacity in serve/batch_assembly.h) of token_bucket, then x4 up to `max_tokens`, and
// max_tokens' own. Between them ServiceTimes interpolates linearly.
std::vector<int64_t> packed_time_points(int64_t max_tokens, int64_t token_bucket);

// Milliseconds per packed step by plan capacity (ServiceTimes' key is tokens here), with every
// context of `layout` running at once. Each step holds requests of the load's lengths (the last
// one cut to fit): attention's cost depends on them. At least 3 runs and about `seconds` each.
ServiceTimes measure_packed_times(const Engine& engine, const serve::Signature& sig,
                                  const std::map<std::string, Dims>& request, const SessionOptions& options,
                                  const std::vector<int64_t>& capacities, Lengths lengths, Layout layout, double seconds,
                                  const std::atomic<bool>& stop);

// The token batcher of one class: FIFO arrivals of tokens[i] tokens each; a batch closes as
// serve::batch_closes_at says, counting tokens against cls.max_batch_tokens (rows reaching
// cls.max_batch close it too); it takes queued requests in order while both limits hold (one
// larger than the budget runs alone) and runs for times.at(packed_capacity(its tokens)).
SimResult simulate_token_batcher(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                 int64_t token_bucket, const std::vector<double>& arrivals_s,
                                 const std::vector<int64_t>& tokens);

// The highest Poisson rate (requests/s) whose simulated p99 stays within `p99_ms`.
double simulated_token_capacity(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                int64_t token_bucket, Lengths lengths, double p99_ms);

}  // namespace fusor::tune
