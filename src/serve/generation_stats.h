// The generative side of /metrics (issue #17), per model and traffic class, under vLLM's names
// with a "fusor:" prefix so that dashboards built for vLLM read them:
//
//   fusor:time_to_first_token_seconds, fusor:inter_token_latency_seconds,
//   fusor:e2e_request_latency_seconds, fusor:request_queue_time_seconds   histograms
//   fusor:prompt_tokens_total, fusor:generation_tokens_total               counters
//   fusor:request_success_total{finished_reason=stop|length|abort}         counter
//   fusor:request_failure_total{reason=bad_request|unavailable|internal}   counter
//   fusor:num_preemptions_total                                            counter
//   fusor:num_step_interruptions_total                                     counter
//   fusor:num_requests_running, fusor:num_requests_waiting                 gauges (per class)
//   fusor:kv_cache_usage_perc                                              gauge (per model, 0..1)
//
// Thread-safe: the scheduler records, the metrics listener reads.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "serve/stats.h"
#include "serve/status.h"

namespace fusor::serve {

class GenerativeModel;

// Upper bounds of the buckets, in seconds (+Inf is implicit): from a millisecond to a minute.
inline constexpr std::array<double, 18> kGenerationBucketsS = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                               0.15,  0.25,   0.5,   0.75, 1.0,  2.5,  5.0,  10.0, 60.0};

using SecondsHistogram = BucketHistogram<kGenerationBucketsS>;

struct GenerationClassStats {
  SecondsHistogram ttft, itl, e2e, queue;
  uint64_t prompt_tokens = 0, generation_tokens = 0, preemptions = 0, interruptions = 0;
  std::map<std::string, uint64_t> finished;  // finish reason -> requests
  std::map<std::string, uint64_t> failures;  // reason (code name) -> requests
  int64_t running = 0, waiting = 0;
  uint64_t last_finished_ms = 0;  // when a request last finished, ms since the epoch (Triton's last_inference)
};

class GenerationStats {
 public:
  explicit GenerationStats(const std::vector<std::string>& classes);

  void queued(const std::string& cls);                      // waiting += 1
  void admitted(const std::string& cls, double queue_s);    // waiting -= 1, running += 1 (first time)
  void preempted(const std::string& cls);                   // running -= 1, waiting += 1
  void readmitted(const std::string& cls);                  // waiting -= 1, running += 1
  void interrupted(const std::string& cls);                 // a step with its work stopped for a better class
  void first_token(const std::string& cls, double ttft_s);
  void next_token(const std::string& cls, double itl_s);
  // A request left: finished with `reason` (from the running gauge, or the waiting one when it
  // was cancelled while waiting), or failed with `code` (`was_queued`: counted by queued()).
  void finished(const std::string& cls, const std::string& reason, bool was_running, int64_t prompt_tokens,
                int64_t generated, double e2e_s);
  void failed(const std::string& cls, Code code, bool was_queued, bool was_running);

  std::map<std::string, GenerationClassStats> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, GenerationClassStats> classes_;
};

// The Prometheus text of every generative model's stats.
std::string generation_prometheus_text(const std::vector<GenerativeModel*>& models);

// Each generative model's requests waiting or running, per class.
std::vector<PendingRequests> generation_pending(const std::vector<GenerativeModel*>& models);

}  // namespace fusor::serve
