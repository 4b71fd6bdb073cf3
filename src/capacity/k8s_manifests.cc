#include "capacity/k8s_manifests.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fusor/error.h"

namespace fusor::capacity {
namespace {

constexpr int kHttp = 8000, kGrpc = 8001, kMetrics = 8002;
// Not measured by fusor tune: room for the weights, the arena of each execution context and
// the server's buffers for models the size of MiniLM or ResNet-18. Raise it for larger models.
constexpr const char* kMemory = "2Gi";

// A double-quoted YAML scalar: JSON's string syntax is valid YAML.
std::string q(const std::string& s) { return nlohmann::json(s).dump(); }

// Every line of `text` prefixed with `pad` (empty lines stay empty).
std::string indent(const std::string& text, const std::string& pad) {
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);) out += (line.empty() ? "" : pad + line) + "\n";
  return out;
}

struct Names {
  std::string app, config_map;
};

std::string args_list(const CapacityPlan& p, const ManifestOptions& o) {
  std::vector<std::string> args = {"--model", o.model_name + "=/models/model.onnx", "--config", "/etc/fusor/tuned.yaml",
                                   "--threads", std::to_string(p.threads_per_instance), "--host", "0.0.0.0",
                                   "--http", std::to_string(kHttp), "--grpc", std::to_string(kGrpc),
                                   "--metrics", std::to_string(kMetrics)};
  std::string out;
  for (const std::string& a : args) out += (out.empty() ? "" : ", ") + q(a);
  return "[" + out + "]";
}

std::string resources(const CapacityPlan& p) {
  const std::string cpu = q(std::to_string(p.threads_per_instance));
  return "# CPU: the " + std::to_string(p.threads_per_instance) +
         " threads per instance fusor tune measured with (tuned.threads). Requests equal\n"
         "# limits (Guaranteed QoS): with the kubelet's static CPU manager the pod gets whole cores,\n"
         "# as the measurement had. Memory is a default, not a measurement.\n"
         "resources:\n"
         "  requests: {cpu: " + cpu + ", memory: " + kMemory + "}\n"
         "  limits: {cpu: " + cpu + ", memory: " + kMemory + "}\n";
}

std::string volume_mount() {
  return "volumeMounts:\n"
         "  - {name: tuned-config, mountPath: /etc/fusor, readOnly: true}\n";
}

std::string volumes(const Names& n) {
  return "volumes:\n"
         "  - name: tuned-config\n"
         "    configMap: {name: " + n.config_map + "}\n";
}

std::string config_map(const CapacityPlan& p, const ManifestOptions& o, const Names& n) {
  std::string body = o.tuned_yaml;
  if (!body.empty() && body.back() != '\n') body += "\n";
  // The indentation indicator (2: four spaces under the two of `data:`) keeps the block
  // literal valid whatever the file's first line starts with.
  return "# The tuned config fusor serve reads (" + (o.tuned_path.empty() ? std::string("tuned.yaml") : o.tuned_path) +
         ", written by fusor tune),\n# verbatim: its tuned: section is the measurement this plan came from.\n"
         "apiVersion: v1\n"
         "kind: ConfigMap\n"
         "metadata:\n"
         "  name: " + n.config_map + "\n"
         "  labels: {app: " + n.app + "}\n"
         "data:\n"
         "  tuned.yaml: |2\n" + indent(body, "    ");
}

std::string deployment(const CapacityPlan& p, const ManifestOptions& o, const Names& n) {
  const std::string c = "- name: fusor\n"
                        "  image: " + q(o.image) + "\n"
                        "  # The model is in the image; the tuned config comes from the ConfigMap.\n"
                        "  command: [\"fusor\", \"serve\"]\n"
                        "  args: " + args_list(p, o) + "\n"
                        "  ports:\n"
                        "    - {name: http, containerPort: " + std::to_string(kHttp) + "}\n"
                        "    - {name: grpc, containerPort: " + std::to_string(kGrpc) + "}\n"
                        "    - {name: metrics, containerPort: " + std::to_string(kMetrics) + "}\n"
                        "  readinessProbe:\n"
                        "    httpGet: {path: /v2/health/ready, port: http}\n"
                        "    periodSeconds: 5\n"
                        "  livenessProbe:\n"
                        "    httpGet: {path: /v2/health/live, port: http}\n"
                        "    initialDelaySeconds: 10\n"
                        "    periodSeconds: 10\n" +
                        indent(resources(p) + volume_mount(), "  ");
  return "# fusor plan: class " + p.class_name + " at " + two_decimals(p.qps) + " qps.\n"
         "apiVersion: apps/v1\n"
         "kind: Deployment\n"
         "metadata:\n"
         "  name: " + n.app + "\n"
         "  labels: {app: " + n.app + "}\n"
         "spec:\n"
         "  # replicas = ceil(" + two_decimals(p.qps) + " qps / (" + two_decimals(p.capacity_qps_per_instance) +
         " qps per instance x (1 - headroom " + two_decimals(p.headroom) + ")))\n"
         "  # capacity at p99 <= " + two_decimals(p.p99_target_ms) + " ms: " + p.capacity_basis + "\n"
         "  replicas: " + std::to_string(p.instances) + "\n"
         "  selector:\n"
         "    matchLabels: {app: " + n.app + "}\n"
         "  template:\n"
         "    metadata:\n"
         "      labels: {app: " + n.app + "}\n"
         "      annotations:\n"
         "        prometheus.io/scrape: \"true\"\n"
         "        prometheus.io/port: \"" + std::to_string(kMetrics) + "\"\n"
         "        prometheus.io/path: /metrics\n"
         "    spec:\n"
         "      containers:\n" + indent(c, "        ") + indent(volumes(n), "      ");
}

std::string service(const Names& n) {
  return "apiVersion: v1\n"
         "kind: Service\n"
         "metadata:\n"
         "  name: " + n.app + "\n"
         "  labels: {app: " + n.app + "}\n"
         "spec:\n"
         "  type: ClusterIP\n"
         "  selector: {app: " + n.app + "}\n"
         "  ports:\n"
         "    - {name: http, port: " + std::to_string(kHttp) + ", targetPort: http}\n"
         "    - {name: grpc, port: " + std::to_string(kGrpc) + ", targetPort: grpc, appProtocol: grpc}\n"
         "    - {name: metrics, port: " + std::to_string(kMetrics) + ", targetPort: metrics}\n";
}

std::string little(const CapacityPlan& p) {
  return two_decimals(p.per_instance_qps) + " qps x " + two_decimals(p.p50_ms) +
         " ms (predicted p50, the mean estimate) = " + two_decimals(p.per_instance_qps * p.p50_ms / 1000) +
         ", rounded up, at least 1";
}

int64_t max_replicas(const CapacityPlan& p) { return std::max(4 * p.instances, p.instances + 1); }

std::string hpa(const CapacityPlan& p, const Names& n) {
  return "# Scales on the queue: requests queued or running per pod, the server's\n"
         "# nv_inference_pending_request_count gauge, exposed to the HPA by a Prometheus adapter\n"
         "# (docs/plan.md has a rule).\n"
         "apiVersion: autoscaling/v2\n"
         "kind: HorizontalPodAutoscaler\n"
         "metadata:\n"
         "  name: " + n.app + "\n"
         "  labels: {app: " + n.app + "}\n"
         "spec:\n"
         "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: " + n.app + "}\n"
         "  # the planned instances; up to 4x (at least one more) for growth past the plan\n"
         "  minReplicas: " + std::to_string(p.instances) + "\n"
         "  maxReplicas: " + std::to_string(max_replicas(p)) + "\n"
         "  metrics:\n"
         "    - type: Pods\n"
         "      pods:\n"
         "        metric: {name: nv_inference_pending_request_count}\n"
         "        # Little's law at the planned load per instance: " + little(p) + "\n"
         "        target: {type: AverageValue, averageValue: \"" + std::to_string(planned_requests_in_flight(p)) + "\"}\n";
}

std::string inference_service(const CapacityPlan& p, const ManifestOptions& o, const Names& n) {
  // Knative serves one port per container: HTTP; its probes go to that port.
  const std::string c = "- name: kserve-container\n"
                        "  image: " + q(o.image) + "\n"
                        "  command: [\"fusor\", \"serve\"]\n"
                        "  args: " + args_list(p, o) + "\n"
                        "  ports:\n"
                        "    - {name: http1, containerPort: " + std::to_string(kHttp) + ", protocol: TCP}\n"
                        "  readinessProbe:\n"
                        "    httpGet: {path: /v2/health/ready}\n" +
                        indent(resources(p) + volume_mount(), "  ");
  return "# The same container as a KServe custom predictor: fusor serve speaks the v2 protocol.\n"
         "apiVersion: serving.kserve.io/v1beta1\n"
         "kind: InferenceService\n"
         "metadata:\n"
         "  name: " + n.app + "\n"
         "  labels: {app: " + n.app + "}\n"
         "  annotations:\n"
         "    prometheus.io/scrape: \"true\"\n"
         "    prometheus.io/port: \"" + std::to_string(kMetrics) + "\"\n"
         "spec:\n"
         "  predictor:\n"
         "    minReplicas: " + std::to_string(p.instances) + "\n"
         "    maxReplicas: " + std::to_string(max_replicas(p)) + "\n"
         "    # requests in flight per pod, as the HPA: " + little(p) + "\n"
         "    scaleMetric: concurrency\n"
         "    scaleTarget: " + std::to_string(planned_requests_in_flight(p)) + "\n"
         "    containers:\n" + indent(c, "      ") + indent(volumes(n), "    ");
}

}  // namespace

std::string k8s_resource_name(const std::string& model_name) {
  std::string s = "fusor-";
  for (char ch : model_name) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (ok || (s.back() != '-')) s += ok ? c : '-';
  }
  s.resize(std::min<size_t>(s.size(), 63 - 7));  // room for "-tuned"
  while (s.back() == '-') s.pop_back();
  return s;
}

std::vector<Manifest> k8s_manifests(const CapacityPlan& plan, const ManifestOptions& options) {
  Names n{k8s_resource_name(options.model_name), k8s_resource_name(options.model_name) + "-tuned"};
  return {{"configmap.yaml", config_map(plan, options, n)},
          {"deployment.yaml", deployment(plan, options, n)},
          {"service.yaml", service(n)},
          {"hpa.yaml", hpa(plan, n)},
          {"inferenceservice.yaml", inference_service(plan, options, n)}};
}

std::vector<std::string> write_manifests(const std::vector<Manifest>& manifests, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw Error("cannot create --k8s directory " + dir + ": " + (ec ? ec.message() : "not a directory"));
  std::vector<std::string> names;
  for (const Manifest& m : manifests) {
    const std::string path = (std::filesystem::path(dir) / m.file_name).string();
    std::ofstream f(path);
    f << m.text;
    f.close();
    if (!f) throw Error("cannot write " + path + ": " + std::strerror(errno));
    names.push_back(m.file_name);
  }
  return names;
}

}  // namespace fusor::capacity
