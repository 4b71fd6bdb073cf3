#include "profile/profiler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "engine/internals.h"
#include "fusor/packed.h"
#include "passes/pack_tokens.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<ProfileRow> aggregate(const std::vector<StepInfo>& steps, const std::vector<std::vector<double>>& times_s,
                                  GroupBy group, double total_ms, const Ceilings& ceilings) {
  auto key_of = [&](const StepInfo& st) {
    switch (group) {
      case GroupBy::Op: return st.op;
      case GroupBy::KernelAndShapes: return st.kernel + " " + st.shapes;
      case GroupBy::Kernel: break;
    }
    return st.kernel;
  };
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t s = 0; s < steps.size(); ++s) groups[key_of(steps[s])].push_back(s);

  std::vector<ProfileRow> rows;
  for (const auto& [key, members] : groups) {
    ProfileRow r;
    r.name = key;
    r.calls = static_cast<int64_t>(members.size());
    std::set<std::string> ops;
    for (size_t s : members) {
      r.bytes_read += steps[s].cost.bytes_read;
      r.bytes_written += steps[s].cost.bytes_written;
      r.flops += steps[s].cost.flops;
      ops.insert(steps[s].op);
    }
    for (const auto& o : ops) r.op += (r.op.empty() ? "" : "+") + o;
    std::vector<double> per_run;
    per_run.reserve(times_s.size());
    for (const auto& run : times_s) {
      double sum = 0;
      for (size_t s : members) sum += run[s];
      per_run.push_back(sum);
    }
    r.time_ms = median(per_run) * 1e3;
    r.share = total_ms > 0 ? r.time_ms / total_ms : 0.0;
    const double bytes = r.bytes_read + r.bytes_written, secs = r.time_ms / 1e3;
    r.gbps = secs > 0 ? bytes / secs / 1e9 : 0.0;
    r.gflops = secs > 0 ? r.flops / secs / 1e9 : 0.0;
    r.intensity = bytes > 0 ? r.flops / bytes : 0.0;
    r.bound = r.flops > 0 && r.intensity >= ceilings.balance() ? "compute" : "memory";
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.time_ms > b.time_ms; });
  return rows;
}

namespace {

std::string step_shapes(const Plan& plan, const Step& step) {
  auto dims_of = [&](int v) { return v < 0 ? std::string("-") : dims_to_string(plan.types[static_cast<size_t>(v)].dims); };
  std::string s;
  for (size_t i = 0; i < step.inputs.size(); ++i) s += (i ? " x " : "") + dims_of(step.inputs[i]);
  s += " -> ";
  for (size_t i = 0; i < step.outputs.size(); ++i) s += (i ? ", " : "") + dims_of(step.outputs[i]);
  return s;
}

std::vector<StepInfo> describe_steps(const Plan& plan) {
  std::vector<StepInfo> out;
  out.reserve(plan.steps.size());
  for (const Step& step : plan.steps) {
    const Node& node = plan.graph->nodes[static_cast<size_t>(step.node)];
    StepInfo info;
    info.kernel = step.kernel->name();
    info.op = node.op_type;
    info.node = node.name.empty() ? node.op_type + "#" + std::to_string(step.node) : node.name;
    info.shapes = step_shapes(plan, step);
    info.cost = plan_step_cost(plan, step);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace

namespace {

// Why the model cannot be served packed (fusor/packed.h), or "" when it can (or fusion is off,
// which says nothing about the model): the profile lists it with the declined fusions.
std::string packing_refusal(const Engine& engine, const SessionOptions& options) {
  if (!options.fusion || options.reference) return "";
  try {
    packed_session(engine, 16, options);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::UnsupportedOp) return e.what();
    throw;
  }
  return "";
}

}  // namespace

ProfileReport profile_model(const Engine& engine, const std::map<std::string, Dims>& input_dims,
                            const ProfileOptions& options, const Ceilings& ceilings) {
  if (options.runs < 1) throw Error("profile: runs must be at least 1");
  if (options.warmup < 0) throw Error("profile: warmup must not be negative");
  auto feeds = engine.sample_inputs(input_dims);
  Session session = engine.session(input_dims, options.session);
  prepare_for(session, feeds);  // a session planned per run plans for the sample inputs now
  const Plan& plan = plan_of(session);
  const std::vector<StepInfo> steps = describe_steps(plan);

  for (int i = 0; i < options.warmup; ++i) session.run(feeds);

  using clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> times(static_cast<size_t>(options.runs), std::vector<double>(steps.size(), 0.0));
  std::vector<double> latencies_s, step_sums_s;
  // The executor's step hook rather than Session::set_observer, which copies blocked tensors to
  // row-major: the hook only stores numbers (no allocation, nothing to skew the wall time);
  // trace events get their strings afterwards.
  std::vector<std::vector<double>> ends_us(static_cast<size_t>(options.runs), std::vector<double>(steps.size(), 0.0));
  clock::time_point origin{};
  int run = 0;
  executor_of(session).set_step_hook([&](size_t index, const Step&, double seconds) {
    const auto end = clock::now();
    times[static_cast<size_t>(run)][index] = seconds;
    ends_us[static_cast<size_t>(run)][index] = std::chrono::duration<double, std::micro>(end - origin).count();
  });
  for (run = 0; run < options.runs; ++run) {
    const auto t0 = clock::now();
    if (run == 0) origin = t0;
    session.run(feeds);
    latencies_s.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    double sum = 0;
    for (double t : times[static_cast<size_t>(run)]) sum += t;
    step_sums_s.push_back(sum);
  }
  executor_of(session).set_step_hook(nullptr);

  ProfileReport report;
  report.trace.reserve(static_cast<size_t>(options.runs) * steps.size());
  for (size_t r = 0; r < times.size(); ++r)
    for (size_t s = 0; s < steps.size(); ++s) {
      const StepInfo& st = steps[s];
      const double dur_us = times[r][s] * 1e6;
      report.trace.push_back({st.kernel, st.op, st.node, st.shapes, static_cast<int>(r),
                              std::max(0.0, ends_us[r][s] - dur_us), dur_us});
    }

  report.model = options.model;
  report.batch = options.batch;
  report.seq = options.seq;
  report.runs = options.runs;
  report.warmup = options.warmup;
  report.threads = cpu::thread_width();
  report.nodes_in_model = engine.node_count();
  report.kernels_per_inference = session.kernels_per_inference();
  report.kernels_unfused = report.kernels_per_inference;
  report.planned_per_run = planned_per_run(session);
  if (plan.source_graph != plan.graph) {  // fusion ran: count the plan it replaced (no run needed)
    SessionOptions unfused = options.session;
    unfused.fusion.reset();
    report.kernels_unfused = engine.session(input_dims, unfused).kernels_per_inference();
  }
  for (const FusionItem& item : plan.fusion.items)
    report.fusion_items.push_back({item.name, item.kind, item.pass, item.nodes, item.bytes_saved});
  for (const NotFused& nf : plan.fusion.not_fused) report.not_fused.push_back({nf.pass, nf.nodes, nf.reason});
  if (std::string why = packing_refusal(engine, options.session); !why.empty())
    report.not_fused.push_back({kPackPass, {}, why});
  report.ceilings = ceilings;
  report.memory = session.memory();
  report.latency_ms = median(latencies_s) * 1e3;
  report.steps_ms = median(step_sums_s) * 1e3;
  report.kernels = aggregate(steps, times, options.by_shape ? GroupBy::KernelAndShapes : GroupBy::Kernel, report.steps_ms,
                             ceilings);
  report.ops = aggregate(steps, times, GroupBy::Op, report.steps_ms, ceilings);
  for (const auto& s : steps) {
    report.model_flops += s.cost.flops;
    report.model_bytes += s.cost.bytes();
  }
  report.inferences_per_s = report.latency_ms > 0 ? 1e3 / report.latency_ms : 0.0;
  report.throughput_per_s = static_cast<double>(options.batch) * report.inferences_per_s;
  report.compute_efficiency =
      ceilings.sgemm_gflops > 0 ? report.model_flops * report.inferences_per_s / (ceilings.sgemm_gflops * 1e9) : 0.0;
  return report;
}

}  // namespace fusor
