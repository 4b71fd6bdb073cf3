// The profile report as JSON and as a terminal table, and the table of a decoder's step profile.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "fusor/profile.h"

namespace fusor {
namespace {

nlohmann::json row_json(const ProfileRow& r) {
  return {{"name", r.name},
          {"op", r.op},
          {"calls", r.calls},
          {"time_ms", r.time_ms},
          {"share", r.share},
          {"bytes", r.bytes_read + r.bytes_written},
          {"bytes_read", r.bytes_read},
          {"bytes_written", r.bytes_written},
          {"flops", r.flops},
          {"gbps", r.gbps},
          {"gflops", r.gflops},
          {"intensity", r.intensity},
          {"bound", r.bound}};
}

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

void append_rows(std::string& out, const std::vector<ProfileRow>& rows, size_t limit, bool show_op) {
  out += format("%9s %6s %6s %9s %9s %8s %8s %7s  %-7s  %s\n", "ms/inf", "%", "calls", "MB r+w", "MFLOP", "GB/s",
                "GFLOP/s", "FLOP/B", "bound", show_op ? "kernel (op)" : "op");
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const auto& r = rows[i];
    std::string label = show_op ? r.name + " (" + r.op + ")" : r.name;
    out += format("%9.3f %6.1f %6lld %9.2f %9.1f %8.1f %8.1f %7.2f  %-7s  %s\n", r.time_ms, 100 * r.share,
                  static_cast<long long>(r.calls), (r.bytes_read + r.bytes_written) / 1e6, r.flops / 1e6, r.gbps,
                  r.gflops, r.intensity, r.bound.c_str(), label.c_str());
  }
  if (rows.size() > limit) out += format("%9s (%zu more)\n", "...", rows.size() - limit);
}

void render_kind(std::string& out, const char* what, const StepKindProfile& k, size_t top) {
  if (k.steps == 0) {
    out += format("%s steps: none\n", what);
    return;
  }
  double kernels = 0;
  for (const KernelTime& t : k.kernels) kernels += t.seconds;
  out += format("%s steps: %lld (%lld tokens), %.3f s, %.3f ms each; kernels %.1f%% of it\n", what,
                static_cast<long long>(k.steps), static_cast<long long>(k.tokens), k.seconds,
                1e3 * k.seconds / static_cast<double>(k.steps), k.seconds > 0 ? 100 * kernels / k.seconds : 0.0);
  out += format("  %10s %6s %8s %10s  %s\n", "ms", "share", "calls", "us/call", "kernel (op)");
  double rest = 0;
  size_t rest_count = 0;
  for (size_t i = 0; i < k.kernels.size(); ++i) {
    const KernelTime& t = k.kernels[i];
    if (i >= top) {
      rest += t.seconds;
      ++rest_count;
      continue;
    }
    out += format("  %10.3f %5.1f%% %8lld %10.1f  %s (%s)\n", 1e3 * t.seconds,
                  k.seconds > 0 ? 100 * t.seconds / k.seconds : 0.0, static_cast<long long>(t.calls),
                  t.calls ? 1e6 * t.seconds / static_cast<double>(t.calls) : 0.0, t.kernel.c_str(), t.op.c_str());
  }
  if (rest_count)
    out += format("  %10.3f %5.1f%% %8s %10s  (%zu more kernel%s)\n", 1e3 * rest,
                  k.seconds > 0 ? 100 * rest / k.seconds : 0.0, "", "", rest_count, rest_count == 1 ? "" : "s");
}

}  // namespace

std::string profile_json(const ProfileReport& r) {
  nlohmann::json kernels = nlohmann::json::array(), ops = nlohmann::json::array();
  nlohmann::json items = nlohmann::json::array(), not_fused = nlohmann::json::array();
  for (const auto& i : r.fusion_items)
    items.push_back({{"name", i.name}, {"kind", i.kind}, {"pass", i.pass}, {"nodes", i.nodes}, {"bytes_saved", i.bytes_saved}});
  for (const auto& d : r.not_fused) not_fused.push_back({{"pass", d.pass}, {"nodes", d.nodes}, {"reason", d.reason}});
  for (const auto& k : r.kernels) kernels.push_back(row_json(k));
  for (const auto& o : r.ops) ops.push_back(row_json(o));
  nlohmann::json j = {
      {"model", r.model},
      {"batch", r.batch},
      {"seq", r.seq},
      {"runs", r.runs},
      {"warmup", r.warmup},
      {"threads", r.threads},
      {"nodes_in_model", r.nodes_in_model},
      {"kernels_per_inference", r.kernels_per_inference},
      {"kernels_per_inference_unfused", r.kernels_unfused},
      {"planned_per_run", r.planned_per_run},
      {"latency_ms", r.latency_ms},
      {"steps_ms", r.steps_ms},
      {"kernels", std::move(kernels)},
      {"ops", std::move(ops)},
      {"fusion_items", std::move(items)},
      {"not_fused", std::move(not_fused)},
      {"ceilings",
       {{"copy_gbps", r.ceilings.copy_gbps},
        {"sgemm_gflops", r.ceilings.sgemm_gflops},
        {"balance_flop_per_byte", r.ceilings.balance()},
        {"cpu", r.ceilings.cpu},
        {"threads", r.ceilings.threads},
        {"quick", r.ceilings.quick},
        {"cached", r.ceilings.cached}}},
      {"model_flops", r.model_flops},
      {"model_bytes", r.model_bytes},
      {"inferences_per_s", r.inferences_per_s},
      {"throughput_per_s", r.throughput_per_s},
      {"compute_efficiency", r.compute_efficiency},
      {"memory",
       {{"arena_bytes", r.memory.arena_bytes},
        {"lower_bound_bytes", r.memory.lower_bound_bytes},
        {"naive_bytes", r.memory.naive_bytes},
        {"weights_bytes", r.memory.weights_bytes}}}};
  return j.dump(2) + "\n";
}

std::string profile_table(const ProfileReport& r, size_t top) {
  std::string out;
  const std::string seq = r.seq > 0 ? format("  seq %lld", static_cast<long long>(r.seq)) : "";
  out += format("%s  batch %lld%s  %d threads  %d runs after %d warm-up\n", r.model.c_str(),
                static_cast<long long>(r.batch), seq.c_str(), r.threads, r.runs, r.warmup);
  out += format("ceilings: copy %.1f GB/s, sgemm %.1f GFLOP/s, balance %.1f FLOP/B (%s%s)\n", r.ceilings.copy_gbps,
                r.ceilings.sgemm_gflops, r.ceilings.balance(), r.ceilings.cached ? "cached" : "measured",
                r.ceilings.quick ? ", quick" : "");
  out += format("\nTop kernels by time (median per inference)\n");
  append_rows(out, r.kernels, top, true);
  out += format("\nPer op type\n");
  append_rows(out, r.ops, r.ops.size(), false);
  const double achieved = r.model_flops * r.inferences_per_s / 1e9;
  out += format("\nlatency %.3f ms (median), kernels %.3f ms (%.1f%%), %.1f inferences/s, %.1f samples/s\n",
                r.latency_ms, r.steps_ms, r.latency_ms > 0 ? 100 * r.steps_ms / r.latency_ms : 0.0,
                r.inferences_per_s, r.throughput_per_s);
  out += format("%zu nodes in model, %zu kernels per inference (%zu unfused), %zu fusion items\n",
                r.nodes_in_model, r.kernels_per_inference, r.kernels_unfused, r.fusion_items.size());
  if (!r.planned_per_run.empty())
    out += "planned per run (each run with new input values plans again): " + r.planned_per_run + "\n";
  std::map<std::string, int> kinds;
  for (const auto& i : r.fusion_items) ++kinds[i.kind];
  std::string by_kind;
  for (const auto& [kind, n] : kinds) by_kind += format("%s%s %d", by_kind.empty() ? "" : ", ", kind.c_str(), n);
  if (!by_kind.empty()) out += "  fused: " + by_kind + "\n";
  out += format("not fused: %zu opportunities%s\n", r.not_fused.size(), r.not_fused.empty() ? "" : " (pass: first node: reason)");
  for (size_t i = 0; i < r.not_fused.size() && i < top; ++i) {
    const auto& d = r.not_fused[i];
    out += "  " + d.pass + ": " + (d.nodes.empty() ? std::string("-") : d.nodes[0]) + ": " + d.reason + "\n";
  }
  if (r.not_fused.size() > top) out += format("  ... (%zu more in --json)\n", r.not_fused.size() - top);
  out += format("model: %.3f GFLOP and %.1f MB moved per inference; %.1f GFLOP/s achieved\n", r.model_flops / 1e9,
                r.model_bytes / 1e6, achieved);
  out += format("compute efficiency: %.1f%% of the sgemm ceiling\n", 100 * r.compute_efficiency);
  out += format("memory: arena %.2f MiB (lower bound %.2f, naive %.2f), weights %.2f MiB\n",
                r.memory.arena_bytes / 1048576.0, r.memory.lower_bound_bytes / 1048576.0,
                r.memory.naive_bytes / 1048576.0, r.memory.weights_bytes / 1048576.0);
  return out;
}

std::string generation_profile_table(const GenerationProfile& profile, size_t top) {
  std::string out;
  render_kind(out, "decode", profile.decode, top);
  render_kind(out, "prompt", profile.prompt, top);
  return out;
}

}  // namespace fusor
