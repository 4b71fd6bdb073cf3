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
#pragma once
#include <string>
#include <vector>

#include "capacity/capacity_plan.h"

namespace fusor::capacity {

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

// A DNS-1123 name for the model's resources: "fusor-" + the name lowercased, other characters
// turned into '-', at most 63 characters.
std::string k8s_resource_name(const std::string& model_name);

}  // namespace fusor::capacity
