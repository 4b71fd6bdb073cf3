// Counters and latency histograms of one served model, per traffic class. They feed both
// Triton's statistics extension (per model) and the Prometheus text at /metrics (per class).
// Thread-safe: the batcher's workers and the protocol threads update them concurrently.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "serve/status.h"

namespace fusor::serve {

// A model's requests queued or running in one class, as /metrics' pending gauge shows them.
struct PendingRequests {
  std::string model, cls;
  int64_t count = 0;
};

// Upper bounds of the latency histogram buckets, in microseconds (+Inf is implicit).
inline constexpr std::array<double, 14> kLatencyBucketsUs = {100,    250,    500,    1000,    2500,    5000,    10000,
                                                             25000,  50000,  100000, 250000,  500000,  1000000, 5000000};

// Counts of observations per bucket of ascending upper bounds (the last bucket is +Inf), their
// sum and their number: a Prometheus histogram. Instantiated per unit (microseconds here,
// seconds for generation).
template <const auto& Bounds>
struct BucketHistogram {
  static constexpr const auto& bounds = Bounds;
  std::array<uint64_t, Bounds.size() + 1> counts{};
  double sum = 0;
  uint64_t count = 0;
  void add(double value) {
    size_t i = 0;
    while (i < Bounds.size() && value > Bounds[i]) ++i;
    ++counts[i];
    sum += value;
    ++count;
  }
};
using Histogram = BucketHistogram<kLatencyBucketsUs>;

struct ClassStats {
  uint64_t success = 0, inference_count = 0, exec_count = 0;
  std::map<std::string, uint64_t> failures;  // reason (code name) -> count
  uint64_t queue_us = 0, compute_us = 0, request_us = 0;
  int64_t pending = 0;  // queued or running now
  // Tokens (rows x sequence length) of the requests answered, of what the plans computed for them
  // (padding included), and of what length-bucket padding would have computed (the padding that
  // packed serving removes; equal to computed_tokens when not packed).
  uint64_t useful_tokens = 0, computed_tokens = 0, bucket_plan_tokens = 0;
  Histogram request_latency, queue_latency;
};

struct BatchStats {
  uint64_t count = 0, compute_ns = 0;
};

// The traffic classes' names, in the config's order.
std::vector<std::string> class_names(const ServeConfig& config);

class ModelStats {
 public:
  explicit ModelStats(const std::vector<std::string>& classes);

  void queued(const std::string& cls);
  // A request left the server, answered with `code`; `was_queued` when queued() counted it.
  void finished(const std::string& cls, Code code, bool was_queued, uint64_t queue_ns, uint64_t total_ns,
                int64_t rows);
  // A batch of `requests` requests and `padded_rows` rows ran in `compute_ns`.
  void batch_ran(const std::string& cls, int64_t padded_rows, size_t requests, uint64_t compute_ns);
  // The batch's tokens: the requests' own, what the plan computed, what length buckets would have.
  void tokens_ran(const std::string& cls, int64_t useful, int64_t computed, int64_t bucket_plan);

  struct Snapshot {
    std::map<std::string, ClassStats> classes;
    std::map<int64_t, BatchStats> batches;  // padded batch size -> runs
    uint64_t success_count = 0, success_ns = 0, fail_count = 0, fail_ns = 0, queue_count = 0, queue_ns = 0;
    uint64_t compute_count = 0, compute_ns = 0, inference_count = 0, exec_count = 0, last_inference_ms = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mu_;
  Snapshot s_;
};

}  // namespace fusor::serve
