// The parts of the onboard JSON the report reads, checked and typed once (through JsonField) so
// that the section renderers deal with values, never with missing keys.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "fusor/check.h"
#include "report/json_field.h"

namespace fusor::report {

// One row of a profile's kernels or ops table (src/profile/report.cc).
struct ProfileRowView {
  std::string name, op, bound;
  int64_t calls = 0;
  double time_ms = 0, share = 0, flops = 0, bytes = 0, gflops = 0, gbps = 0, intensity = 0;
};

struct NotFusedView {
  std::string pass, reason;
  std::vector<std::string> nodes;
};

struct ProfileView {
  int64_t batch = 1;
  int64_t kernels_per_inference = 0;
  double latency_ms = 0, steps_ms = 0;
  double model_flops = 0;
  double copy_gbps = 0, sgemm_gflops = 0;  // the machine ceilings
  std::vector<ProfileRowView> kernels, ops;
  size_t fusion_items = 0;
  std::vector<NotFusedView> not_fused;
};

struct CheckItemView {
  std::string name, kind, sample;
  ItemStatus status = ItemStatus::Kept;
  int64_t tier = 0, round = 0;
  double max_abs = 0, threshold = 0, fused_vs_truth = 0, native_vs_truth = 0;
};

struct CheckView {
  bool passed = false;
  std::string mode;
  int64_t rounds = 0;
  size_t samples = 0;
  std::vector<CheckItemView> items;
  std::vector<std::string> rolled_back;
  std::string fault_injected_into;  // empty unless the run injected a fault on purpose
};

struct PlanView {
  std::string class_name;
  double qps = 0, p99_target_ms = 0, headroom = 0, capacity_qps_per_instance = 0, per_instance_qps = 0;
  int64_t instances = 0, threads_per_instance = 0;
  double utilisation = 0, p50_ms = 0, p99_ms = 0;
  double cost_per_hour = 0, cost_per_hour_total = 0, cost_per_million = 0;
  double batch_window_ms = 0;
  int64_t max_batch = 0, execution_contexts = 0;
  std::vector<std::string> manifests;
  // A generative model's plan ("generative" in capacity_plan_json); absent: an encoder's.
  struct Generative {
    int64_t output_tokens = 0, step_tokens = 0, max_running = 0, prefill_chunk = 0;
    double capacity_tokens_per_s = 0, per_instance_tokens_per_s = 0;
    double ttft_target_ms = 0, itl_target_ms = 0, ttft_p99_ms = 0, itl_p99_ms = 0;
  };
  std::optional<Generative> generative;
};

// One entry of "files": what it is and its path relative to the report.
struct NamedFile {
  std::string what, path;
};

ProfileView read_profile(const JsonField& profile);
CheckView read_check(const JsonField& check);
PlanView read_plan(const JsonField& plan);
std::vector<NamedFile> read_files(const JsonField& files);

}  // namespace fusor::report
