#include "serve/generation_stats.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <limits>
#include <sstream>

#include "serve/generative_model.h"
#include "serve/prometheus_label.h"

namespace fusor::serve {

GenerationStats::GenerationStats(const std::vector<std::string>& classes) {
  for (const std::string& c : classes) classes_[c];
}

void GenerationStats::queued(const std::string& cls) {
  std::lock_guard lock(mu_);
  ++classes_[cls].waiting;
}

void GenerationStats::admitted(const std::string& cls, double queue_s) {
  std::lock_guard lock(mu_);
  GenerationClassStats& c = classes_[cls];
  --c.waiting;
  ++c.running;
  c.queue.add(queue_s);
}

void GenerationStats::preempted(const std::string& cls) {
  std::lock_guard lock(mu_);
  GenerationClassStats& c = classes_[cls];
  --c.running;
  ++c.waiting;
  ++c.preemptions;
}

void GenerationStats::interrupted(const std::string& cls) {
  std::lock_guard lock(mu_);
  ++classes_[cls].interruptions;
}

void GenerationStats::readmitted(const std::string& cls) {
  std::lock_guard lock(mu_);
  GenerationClassStats& c = classes_[cls];
  --c.waiting;
  ++c.running;
}

void GenerationStats::first_token(const std::string& cls, double ttft_s) {
  std::lock_guard lock(mu_);
  classes_[cls].ttft.add(ttft_s);
}

void GenerationStats::next_token(const std::string& cls, double itl_s) {
  std::lock_guard lock(mu_);
  classes_[cls].itl.add(itl_s);
}

void GenerationStats::finished(const std::string& cls, const std::string& reason, bool was_running,
                               int64_t prompt_tokens, int64_t generated, double e2e_s) {
  std::lock_guard lock(mu_);
  GenerationClassStats& c = classes_[cls];
  --(was_running ? c.running : c.waiting);
  ++c.finished[reason];
  c.prompt_tokens += static_cast<uint64_t>(prompt_tokens);
  c.generation_tokens += static_cast<uint64_t>(generated);
  c.e2e.add(e2e_s);
  c.last_finished_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

void GenerationStats::failed(const std::string& cls, Code code, bool was_queued, bool was_running) {
  std::lock_guard lock(mu_);
  GenerationClassStats& c = classes_[cls];
  if (was_running) --c.running;
  else if (was_queued) --c.waiting;
  ++c.failures[code_name(code)];  // as ModelStats counts them
}

std::map<std::string, GenerationClassStats> GenerationStats::snapshot() const {
  std::lock_guard lock(mu_);
  return classes_;
}

namespace {

void histogram(std::ostringstream& o, const std::string& name, const std::string& labels, const SecondsHistogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    std::ostringstream le;
    if (i < kGenerationBucketsS.size()) le << kGenerationBucketsS[i];
    else le << "+Inf";
    o << name << "_bucket{" << labels << "," << prometheus_label("le", le.str()) << "} " << cumulative << "\n";
  }
  // Every digit a double has: at the stream's default 6 a long-running sum stopped moving.
  o << name << "_sum{" << labels << "} " << std::setprecision(std::numeric_limits<double>::max_digits10) << h.sum
    << std::setprecision(6) << "\n";
  o << name << "_count{" << labels << "} " << h.count << "\n";
}

}  // namespace

std::vector<PendingRequests> generation_pending(const std::vector<GenerativeModel*>& models) {
  std::vector<PendingRequests> out;
  for (GenerativeModel* m : models)
    for (const auto& [cls, c] : m->stats().snapshot())
      out.push_back({m->name(), cls, static_cast<int64_t>(c.running + c.waiting)});
  return out;
}

std::string generation_prometheus_text(const std::vector<GenerativeModel*>& models) {
  if (models.empty()) return "";
  struct Model {
    GenerativeModel* model;
    std::map<std::string, GenerationClassStats> classes;
    GenerativeModel::Load load;
  };
  std::vector<Model> snaps;
  for (GenerativeModel* m : models) snaps.push_back({m, m->stats().snapshot(), m->load()});
  auto labels = [](const GenerativeModel* m, const std::string& cls) {
    return prometheus_label("model_name", m->name()) + "," + prometheus_label("class", cls);
  };
  std::ostringstream o;
  auto header = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  auto per_class = [&](const char* name, const char* type, const char* help, auto value) {
    header(name, type, help);
    for (const Model& s : snaps)
      for (const auto& [cls, c] : s.classes) o << name << "{" << labels(s.model, cls) << "} " << value(c) << "\n";
  };
  auto histograms = [&](const char* name, const char* help, SecondsHistogram GenerationClassStats::*member) {
    header(name, "histogram", help);
    for (const Model& s : snaps)
      for (const auto& [cls, c] : s.classes) histogram(o, name, labels(s.model, cls), c.*member);
  };
  histograms("fusor:time_to_first_token_seconds", "Time from arrival to the first generated token",
             &GenerationClassStats::ttft);
  histograms("fusor:inter_token_latency_seconds", "Time between consecutive generated tokens of a request",
             &GenerationClassStats::itl);
  histograms("fusor:e2e_request_latency_seconds", "Time from arrival to the last token", &GenerationClassStats::e2e);
  histograms("fusor:request_queue_time_seconds", "Time from arrival to the first scheduled step",
             &GenerationClassStats::queue);
  per_class("fusor:prompt_tokens_total", "counter", "Prompt tokens of finished requests",
            [](const GenerationClassStats& c) { return c.prompt_tokens; });
  per_class("fusor:generation_tokens_total", "counter", "Tokens generated for finished requests",
            [](const GenerationClassStats& c) { return c.generation_tokens; });
  per_class("fusor:num_preemptions_total", "counter", "Sequences preempted (their cache dropped, recomputed later)",
            [](const GenerationClassStats& c) { return c.preemptions; });
  per_class("fusor:num_step_interruptions_total", "counter",
            "Steps holding this class's tokens stopped for a better class's request (their tokens run again)",
            [](const GenerationClassStats& c) { return c.interruptions; });
  per_class("fusor:num_requests_running", "gauge", "Sequences running (holding KV cache blocks)",
            [](const GenerationClassStats& c) { return c.running; });
  per_class("fusor:num_requests_waiting", "gauge", "Requests waiting to run (new or preempted)",
            [](const GenerationClassStats& c) { return c.waiting; });
  // A counter per reason, every reason shown (0 when none), as dashboards expect the series.
  auto by_reason = [&](const char* name, const char* help, std::map<std::string, uint64_t> GenerationClassStats::*counts,
                       const char* label, std::initializer_list<const char*> reasons) {
    header(name, "counter", help);
    for (const Model& s : snaps)
      for (const auto& [cls, c] : s.classes)
        for (const char* reason : reasons) {
          auto it = (c.*counts).find(reason);
          o << name << "{" << labels(s.model, cls) << "," << prometheus_label(label, reason) << "} "
            << (it == (c.*counts).end() ? 0 : it->second) << "\n";
        }
  };
  by_reason("fusor:request_success_total", "Requests finished, by finish reason", &GenerationClassStats::finished,
            "finished_reason", {"stop", "length", "abort"});
  by_reason("fusor:request_failure_total", "Requests refused or failed, by reason", &GenerationClassStats::failures,
            "reason", {"bad_request", "unavailable", "internal"});
  header("fusor:kv_cache_usage_perc", "gauge", "Fraction of the KV cache's blocks in use (0..1)");
  for (const Model& s : snaps) {
    const KvCacheStats& kv = s.load.cache;
    o << "fusor:kv_cache_usage_perc{" << prometheus_label("model_name", s.model->name()) << "} "
      << (kv.blocks > 0 ? static_cast<double>(kv.blocks_used) / static_cast<double>(kv.blocks) : 0.0) << "\n";
  }
  return o.str();
}

}  // namespace fusor::serve
