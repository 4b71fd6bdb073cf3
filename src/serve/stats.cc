#include "serve/stats.h"

#include <chrono>

namespace fusor::serve {

std::vector<std::string> class_names(const ServeConfig& config) {
  std::vector<std::string> names;
  for (const auto& [name, cls] : config.classes) names.push_back(name);
  return names;
}

ModelStats::ModelStats(const std::vector<std::string>& classes) {
  for (const auto& c : classes) s_.classes[c];
}

void ModelStats::queued(const std::string& cls) {
  std::lock_guard lock(mu_);
  ++s_.classes[cls].pending;
}

void ModelStats::finished(const std::string& cls, Code code, bool was_queued, uint64_t queue_ns, uint64_t total_ns,
                          int64_t rows) {
  std::lock_guard lock(mu_);
  ClassStats& c = s_.classes[cls];
  if (was_queued) {
    --c.pending;
    c.queue_us += queue_ns / 1000;
    c.queue_latency.add(queue_ns / 1e3);
  }
  // Triton's statistics count queue time for successes only: dashboards divide it by their count.
  if (was_queued && code == Code::Ok) {
    ++s_.queue_count;
    s_.queue_ns += queue_ns;
  }
  c.request_us += total_ns / 1000;
  c.request_latency.add(total_ns / 1e3);
  if (code == Code::Ok) {
    ++c.success;
    c.inference_count += static_cast<uint64_t>(rows);
    ++s_.success_count;
    s_.success_ns += total_ns;
    s_.inference_count += static_cast<uint64_t>(rows);
    s_.last_inference_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
  } else {
    ++c.failures[code_name(code)];
    ++s_.fail_count;
    s_.fail_ns += total_ns;
  }
}

void ModelStats::batch_ran(const std::string& cls, int64_t padded_rows, size_t requests, uint64_t compute_ns) {
  std::lock_guard lock(mu_);
  ClassStats& c = s_.classes[cls];
  ++c.exec_count;
  c.compute_us += compute_ns / 1000;
  ++s_.exec_count;
  s_.compute_count += requests;  // Triton counts compute per request
  s_.compute_ns += compute_ns * requests;
  BatchStats& b = s_.batches[padded_rows];
  ++b.count;
  b.compute_ns += compute_ns;
}

void ModelStats::tokens_ran(const std::string& cls, int64_t useful, int64_t computed, int64_t bucket_plan) {
  std::lock_guard lock(mu_);
  ClassStats& c = s_.classes[cls];
  c.useful_tokens += static_cast<uint64_t>(useful);
  c.computed_tokens += static_cast<uint64_t>(computed);
  c.bucket_plan_tokens += static_cast<uint64_t>(bucket_plan);
}

ModelStats::Snapshot ModelStats::snapshot() const {
  std::lock_guard lock(mu_);
  return s_;
}

}  // namespace fusor::serve
