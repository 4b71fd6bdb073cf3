#include "serve/metrics.h"

#include <sstream>

#include "serve/kserve_json.h"
#include "serve/prometheus_label.h"

namespace fusor::serve {
namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

void histogram(std::ostringstream& o, const std::string& name, const std::string& labels, const Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    std::string le = i < kLatencyBucketsUs.size() ? std::to_string(static_cast<int64_t>(kLatencyBucketsUs[i])) : "+Inf";
    o << name << "_bucket{" << labels << "," << prometheus_label("le", le) << "} " << cumulative << "\n";
  }
  o << name << "_sum{" << labels << "} " << static_cast<uint64_t>(h.sum) << "\n";
  o << name << "_count{" << labels << "} " << h.count << "\n";
}

}  // namespace

std::string prometheus_text(const std::vector<ServedModel*>& models, const std::vector<PendingRequests>& decoders) {
  std::vector<std::pair<ServedModel*, ModelStats::Snapshot>> snaps;
  for (ServedModel* m : models) snaps.emplace_back(m, m->stats().snapshot());
  auto labels = [](const std::string& model, const std::string& cls) {
    return prometheus_label("model", model) + "," + prometheus_label("version", kModelVersion) + "," +
           prometheus_label("class", cls);
  };
  std::ostringstream o;
  auto family = [&](const Family& f, auto value) {
    o << "# HELP " << f.name << " " << f.help << "\n# TYPE " << f.name << " " << f.type << "\n";
    for (auto& [m, s] : snaps)
      for (const auto& [cls, c] : s.classes) o << f.name << "{" << labels(m->name(), cls) << "} " << value(c) << "\n";
  };
  family({"nv_inference_request_success", "counter", "Number of successful inference requests"},
         [](const ClassStats& c) { return c.success; });
  o << "# HELP nv_inference_request_failure Number of failed inference requests\n"
       "# TYPE nv_inference_request_failure counter\n";
  for (auto& [m, s] : snaps)
    for (const auto& [cls, c] : s.classes)
      for (const char* reason : {"bad_request", "unavailable", "internal", "cancelled"}) {
        auto it = c.failures.find(reason);
        o << "nv_inference_request_failure{" << labels(m->name(), cls) << "," << prometheus_label("reason", reason) << "} "
          << (it == c.failures.end() ? 0 : it->second) << "\n";
      }
  family({"nv_inference_count", "counter", "Number of inferences performed (rows, padding excluded)"},
         [](const ClassStats& c) { return c.inference_count; });
  family({"nv_inference_exec_count", "counter", "Number of model executions (batches) performed"},
         [](const ClassStats& c) { return c.exec_count; });
  family({"nv_inference_request_duration_us", "counter", "Cumulative inference request duration in microseconds"},
         [](const ClassStats& c) { return c.request_us; });
  family({"nv_inference_queue_duration_us", "counter", "Cumulative inference queuing duration in microseconds"},
         [](const ClassStats& c) { return c.queue_us; });
  family({"nv_inference_compute_infer_duration_us", "counter", "Cumulative compute inference duration in microseconds"},
         [](const ClassStats& c) { return c.compute_us; });
  family({"nv_inference_pending_request_count", "gauge", "Instantaneous number of pending requests"},
         [](const ClassStats& c) { return c.pending; });
  for (const PendingRequests& d : decoders)
    o << "nv_inference_pending_request_count{" << labels(d.model, d.cls) << "} " << d.count << "\n";
  family({"fusor_useful_tokens_total", "counter", "Tokens (rows x length) of the requests answered, padding excluded"},
         [](const ClassStats& c) { return c.useful_tokens; });
  family({"fusor_computed_tokens_total", "counter", "Tokens the plans computed for them, padding included"},
         [](const ClassStats& c) { return c.computed_tokens; });
  family({"fusor_bucket_plan_tokens_total", "counter",
          "Tokens length-bucket padding would have computed for the same requests"},
         [](const ClassStats& c) { return c.bucket_plan_tokens; });
  o << "# HELP nv_inference_request_latency_us Inference request latency in microseconds\n"
       "# TYPE nv_inference_request_latency_us histogram\n";
  for (auto& [m, s] : snaps)
    for (const auto& [cls, c] : s.classes) histogram(o, "nv_inference_request_latency_us", labels(m->name(), cls), c.request_latency);
  o << "# HELP nv_inference_queue_latency_us Inference queue latency in microseconds\n"
       "# TYPE nv_inference_queue_latency_us histogram\n";
  for (auto& [m, s] : snaps)
    for (const auto& [cls, c] : s.classes) histogram(o, "nv_inference_queue_latency_us", labels(m->name(), cls), c.queue_latency);
  return o.str();
}

}  // namespace fusor::serve
