// Capacity planning (docs/plan.md): how many instances a target rate needs and what each will
// see, read off the latency-throughput curves fusor tune measured (fusor/tuned_record.h), and the
// Kubernetes manifests that serve the tuned config.
//
//   auto record = fusor::tune::load_tuned_record("tuned.yaml");
//   fusor::capacity::PlanRequest request;  request.qps = 2000;
//   std::cout << fusor::capacity::capacity_plan_table(fusor::capacity::plan_capacity(record, request));
//
// Invariants: nothing is estimated from a model of the server. Capacity, utilisation and latency
// are linear interpolations between measured points and never extrapolate beyond the last one;
// instances = ceil(qps / (capacity x (1 - headroom))), at least 1. src/capacity/capacity_plan.h
// has the rule in full.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusor/tuned_record.h"

namespace fusor::capacity {

// Headroom is a fraction of capacity kept free, in [0, kMaxHeadroom): at 0.95 an instance would
// plan for a twentieth of what it was measured to carry.
inline constexpr double kMaxHeadroom = 0.95;
constexpr bool headroom_in_range(double h) { return h >= 0 && h < kMaxHeadroom; }

struct PlanRequest {
  double qps = 0;                 // total rate to serve, > 0
  // A generative record (a decoder): the rate may be given as generated tokens per second
  // instead of qps (then 0); requests are the record's, generating output_tokens each.
  double tokens_per_s = 0;
  std::string class_name;         // empty: the first latency class, else the first class
  std::optional<double> p99_ms;   // empty: the class's SLO p99
  double headroom = 0.3;          // fraction of capacity kept free, in [0, 0.95)
  double cost_per_hour = 0;       // per instance; 0: no cost given
};

struct CapacityPlan {
  std::string class_name;
  double qps = 0;
  double p99_target_ms = 0;       // 0: the class has no latency bound and none was given
  double headroom = 0;
  double capacity_qps_per_instance = 0;
  int64_t instances = 1;
  double per_instance_qps = 0;
  double utilisation = 0, p50_ms = 0, p99_ms = 0;  // predicted at per_instance_qps
  // A generative record: its requests' output tokens, capacity and load in tokens per second,
  // and the first-token and inter-token p99 predicted at per_instance_qps (all 0 otherwise).
  bool generative = false;
  int64_t output_tokens = 0;
  double capacity_tokens_per_s_per_instance = 0, per_instance_tokens_per_s = 0;
  double ttft_p99_ms = 0, itl_p99_ms = 0, ttft_target_ms = 0, itl_target_ms = 0;
  double cost_per_hour = 0, cost_per_hour_total = 0, cost_per_million = 0;  // 0: no cost given
  int threads_per_instance = 1;
  tune::Setting setting;
  std::vector<std::string> manifests;  // file names written by --k8s, filled by the caller
  // Where the numbers came from, for the table and the manifests' comments.
  std::string model, machine;
  std::string capacity_basis;     // one line: which points bound the capacity
};

// Throws fusor::Error (one line) on a request out of range, an unknown class (naming the known
// ones), a class without a measured curve, or a curve that never meets the p99 target.
CapacityPlan plan_capacity(const tune::TunedRecord& record, const PlanRequest& request);

// A readable summary for a terminal: a few lines and a small table.
std::string capacity_plan_table(const CapacityPlan& plan);

// The plan as JSON text, indented by 2: exactly the fields the onboard report reads (docs/plan.md).
std::string capacity_plan_json_text(const CapacityPlan& plan);

// Kubernetes manifests for a capacity plan (fusor plan --k8s DIR), as plain YAML text whose
// comments say where each number came from:
//   configmap.yaml          the whole tuned.yaml, mounted at /etc/fusor/tuned.yaml
//   deployment.yaml         replicas = plan.instances; fusor serve with the tuned config, CPU =
//                           the threads fusor tune measured with; health probes; scrape annotations
//   service.yaml            ClusterIP: http 8000, grpc 8001, metrics 8002
//   hpa.yaml                autoscaling/v2 on nv_inference_pending_request_count per pod, its
//                           target the requests in flight at the planned load (Little's law)
//   inferenceservice.yaml   the same container as a KServe custom predictor (same v2 protocol)
// The image must hold the fusor binary on PATH and the model at /models/model.onnx.
struct ManifestOptions {
  std::string model_name;   // the served model's name: fusor serve --model NAME=...
  std::string image = "fusor:latest";
  std::string tuned_yaml;   // the tuned.yaml text, served verbatim from the ConfigMap
  std::string tuned_path;   // where it was read from, for the comments
};

struct Manifest {
  std::string file_name;  // e.g. deployment.yaml
  std::string text;
};

std::vector<Manifest> k8s_manifests(const CapacityPlan& plan, const ManifestOptions& options);

// Writes each manifest into `dir` (created when missing) and returns the file names; throws
// fusor::Error (one line) when the directory or a file cannot be written.
std::vector<std::string> write_manifests(const std::vector<Manifest>& manifests, const std::string& dir);

}  // namespace fusor::capacity
