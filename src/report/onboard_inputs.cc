#include "report/onboard_inputs.h"

#include <algorithm>

namespace fusor::report {
namespace {

int64_t integer(const JsonField& f, const std::string& key) { return static_cast<int64_t>(f.number(key)); }

ProfileRowView read_row(const JsonField& r) {
  ProfileRowView v;
  v.name = r.text("name");
  v.op = r.text_or("op", v.name);
  v.bound = r.text_or("bound", "");
  v.calls = integer(r, "calls");
  v.time_ms = r.number("time_ms");
  v.share = r.number_or("share", 0);
  v.flops = r.number("flops");
  v.bytes = r.number("bytes");
  v.gflops = r.number("gflops");
  v.gbps = r.number_or("gbps", 0);
  v.intensity = r.number("intensity");
  return v;
}

std::vector<std::string> texts(const JsonField& f, const std::string& key) {
  std::vector<std::string> out;
  for (const JsonField& x : f.list(key)) {
    if (!x.raw().is_string()) x.fail("must be text");
    out.push_back(x.raw().get<std::string>());
  }
  return out;
}

ItemStatus read_status(const JsonField& item) {
  auto status = item_status_from_name(item.text("status"));
  if (!status) item.at("status").fail("must be \"kept\" or \"rolled_back\"");
  return *status;
}

}  // namespace

ProfileView read_profile(const JsonField& p) {
  if (!p.raw().is_object()) p.fail("must be an object (a fusor profile --json report)");
  ProfileView v;
  v.batch = std::max<int64_t>(1, integer(p, "batch"));
  v.kernels_per_inference = integer(p, "kernels_per_inference");
  v.latency_ms = p.number("latency_ms");
  v.steps_ms = p.number("steps_ms");
  v.model_flops = p.number("model_flops");
  JsonField ceilings = p.object("ceilings");
  v.copy_gbps = ceilings.number("copy_gbps");
  v.sgemm_gflops = ceilings.number("sgemm_gflops");
  for (const JsonField& r : p.list("kernels")) v.kernels.push_back(read_row(r));
  for (const JsonField& r : p.list("ops")) v.ops.push_back(read_row(r));
  v.fusion_items = p.list("fusion_items").size();
  for (const JsonField& d : p.list("not_fused")) v.not_fused.push_back({d.text("pass"), d.text("reason"), texts(d, "nodes")});
  return v;
}

CheckView read_check(const JsonField& c) {
  if (!c.raw().is_object()) c.fail("must be an object (a fusor check --report document)");
  CheckView v;
  v.passed = c.flag_or("passed", false);
  v.mode = c.text_or("mode", "strict");
  v.rounds = static_cast<int64_t>(c.number_or("rounds", 0));
  v.samples = c.has("samples") ? c.list("samples").size() : 0;
  for (const JsonField& i : c.list("items")) {
    CheckItemView item;
    item.name = i.text("name");
    item.kind = i.text_or("kind", "");
    item.sample = i.text_or("sample", "");
    item.status = read_status(i);
    item.tier = static_cast<int64_t>(i.number_or("tier", 0));
    item.round = static_cast<int64_t>(i.number_or("round", 0));
    item.max_abs = i.number_or("max_abs", 0);
    item.threshold = i.number_or("threshold", 0);
    item.fused_vs_truth = i.number_or("fused_vs_truth_max_abs", 0);
    item.native_vs_truth = i.number_or("native_vs_truth_max_abs", 0);
    v.items.push_back(std::move(item));
  }
  v.rolled_back = texts(c, "rolled_back");
  v.fault_injected_into = c.text_or("fault_injected_into", "");
  return v;
}

PlanView read_plan(const JsonField& p) {
  if (!p.raw().is_object()) p.fail("must be an object (capacity_plan_json) or null");
  PlanView v;
  v.class_name = p.text("class");
  v.qps = p.number("qps");
  v.p99_target_ms = p.number_or("p99_target_ms", 0);
  v.headroom = p.number_or("headroom", 0);
  v.capacity_qps_per_instance = p.number("capacity_qps_per_instance");
  v.instances = integer(p, "instances");
  v.per_instance_qps = p.number("per_instance_qps");
  JsonField predicted = p.object("predicted");
  v.utilisation = predicted.number("utilisation");
  v.p50_ms = predicted.number("p50_ms");
  v.p99_ms = predicted.number("p99_ms");
  v.cost_per_hour = p.number_or("cost_per_hour", 0);
  v.cost_per_hour_total = p.number_or("cost_per_hour_total", 0);
  v.cost_per_million = p.number_or("cost_per_million", 0);
  v.threads_per_instance = static_cast<int64_t>(p.number_or("threads_per_instance", 0));
  if (p.has("setting")) {
    JsonField s = p.object("setting");
    v.batch_window_ms = s.number("batch_window_ms");
    v.max_batch = integer(s, "max_batch");
    v.execution_contexts = integer(s, "execution_contexts");
  }
  if (p.has("manifests")) v.manifests = texts(p, "manifests");
  if (p.has("generative")) {
    JsonField g = p.object("generative");
    JsonField s = g.object("setting");
    JsonField predicted = g.object("predicted");
    v.generative = PlanView::Generative{integer(g, "output_tokens"),
                                        integer(s, "step_tokens"),
                                        integer(s, "max_running"),
                                        integer(s, "prefill_chunk"),
                                        g.number("capacity_tokens_per_s_per_instance"),
                                        g.number("per_instance_tokens_per_s"),
                                        g.number_or("ttft_target_ms", 0),
                                        g.number_or("itl_target_ms", 0),
                                        predicted.number("ttft_p99_ms"),
                                        predicted.number("itl_p99_ms")};
  }
  return v;
}

std::vector<NamedFile> read_files(const JsonField& f) {
  if (!f.raw().is_object()) f.fail("must be an object of file paths");
  std::vector<NamedFile> out;
  for (const auto& [what, path] : f.raw().items())
    if (!path.is_null()) out.push_back({what, f.text(what)});
  return out;
}

}  // namespace fusor::report
