// fusor bench: throughput, latency percentiles, kernels per inference and peak RSS per batch; for a
// model that packs, useful tokens per second and the same batch run packed.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "fusor/packed.h"
#include "fusor/tune.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct BenchArgs {
  ModelArgs model;
  double seconds = 3.0;
  int warmup = 3;
  std::string json_path;
};

// This process's peak resident memory: VmHWM, not getrusage's ru_maxrss, which Linux carries
// over exec from the parent (a benchmark driver holding ONNX Runtime sessions reported its own
// peak as fusor's).
int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// Starts the next peak from the memory resident now (Linux: 5 to clear_refs resets VmHWM), so
// that each batch size's peak is its own, not the largest so far.
void reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

nlohmann::json memory_json(const Session::MemoryStats& m) {
  return {{"arena_bytes", m.arena_bytes},
          {"lower_bound_bytes", m.lower_bound_bytes},
          {"naive_bytes", m.naive_bytes},
          {"weights_bytes", m.weights_bytes}};
}

struct Timed {
  std::vector<double> latencies_ms;
  double elapsed_s = 0;
  double per_second(int64_t per_run) const {
    return static_cast<double>(per_run) * static_cast<double>(latencies_ms.size()) / elapsed_s;
  }
};

// Runs `run` for a.seconds (5 runs at least), with a live line on a terminal.
template <class Run>
Timed timed_runs(const BenchArgs& a, const std::string& label, Run run) {
  using clock = std::chrono::steady_clock;
  std::vector<double> latencies_ms;
  auto start = clock::now();
  double elapsed = 0, shown = 0;
  const bool progress = isatty(STDERR_FILENO);
  while (elapsed < a.seconds || latencies_ms.size() < 5) {
    auto t0 = clock::now();
    run();
    auto t1 = clock::now();
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    elapsed = std::chrono::duration<double>(t1 - start).count();
    if (progress && elapsed - shown >= 0.25) {  // a live line on a terminal, nothing in logs
      shown = elapsed;
      std::fprintf(stderr, "\r  %s: %zu runs, %.1f s", label.c_str(), latencies_ms.size(), elapsed);
    }
  }
  if (progress) std::fprintf(stderr, "\r  %s: %zu runs, %.1f s\n", label.c_str(), latencies_ms.size(), elapsed);
  return {std::move(latencies_ms), elapsed};
}

nlohmann::json latency_json(const std::vector<double>& ms) {
  return {{"p50", tune::percentile(ms, 50)}, {"p90", tune::percentile(ms, 90)}, {"p99", tune::percentile(ms, 99)}};
}

// The same batch as one packed step (fusor/packed.h): `batch` requests of one row of --seq tokens
// each, so packed and padded run the same useful tokens; null when the model does not pack.
nlohmann::json bench_packed(const Engine& engine, const BenchArgs& a, int64_t batch, const SessionOptions& options) {
  const auto one = engine.sample_inputs(bind_dims(engine, a.model.parsed_shapes(), 1, a.model.seq));
  std::optional<PackedSession> packed;
  try {
    packed.emplace(packed_session(engine, batch * a.model.seq, options));
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::UnsupportedOp) throw;
    return nullptr;
  }
  const std::vector<std::map<std::string, Tensor>> requests(static_cast<size_t>(batch), one);
  for (int i = 0; i < a.warmup; ++i) packed->run(requests);
  const Timed t = timed_runs(a, "packed batch " + std::to_string(batch), [&] { packed->run(requests); });
  const double throughput = t.per_second(batch);
  return {{"throughput_per_s", throughput},
          {"useful_tokens_per_s", throughput * static_cast<double>(a.model.seq)},
          {"latency_ms", latency_json(t.latencies_ms)},
          {"kernels_per_inference", packed->session().kernels_per_inference()}};
}

nlohmann::json bench_one(const Engine& engine, const BenchArgs& a, int64_t batch) {
  reset_peak_rss();
  auto dims = bind_dims(engine, a.model.parsed_shapes(), batch, a.model.seq);
  auto feeds = engine.sample_inputs(dims);
  const SessionOptions options = a.model.session_options(engine, a.model.model);
  Session session = at_default_dims_explained(engine, a.model, [&] { return engine.session(dims, options); });
  for (int i = 0; i < a.warmup; ++i) session.run(feeds);
  const Timed t = timed_runs(a, "batch " + std::to_string(batch), [&] { session.run(feeds); });
  const std::vector<double>& latencies_ms = t.latencies_ms;
  double throughput = t.per_second(batch);
  nlohmann::json out = {{"batch", batch},
                        {"seq", a.model.seq},
                        {"runs", latencies_ms.size()},
                        {"throughput_per_s", throughput},
                        {"latency_ms", latency_json(latencies_ms)},
                        {"kernels_per_inference", session.kernels_per_inference()},
                        {"memory", memory_json(session.memory())},
                        {"peak_rss_bytes", peak_rss_bytes()}};
  // A model that packs (an encoder of tokens): its useful tokens, and the packed step beside it.
  // Every row here holds --seq real tokens, so the padded plan pads nothing (padding 0); mixed
  // lengths are fusor tune --lengths' and fusor serve's /metrics' to measure.
  if (!a.model.reference && options.fusion) {
    nlohmann::json packed = bench_packed(engine, a, batch, options);
    if (!packed.is_null()) {
      out["useful_tokens_per_s"] = throughput * static_cast<double>(a.model.seq);
      out["padding"] = 0.0;
      out["packed"] = packed;
      out["peak_rss_bytes"] = peak_rss_bytes();
    }
  }
  return out;
}

void bench(const BenchArgs& a) {
  if (!a.json_path.empty()) refuse_writing_over_model(a.json_path, a.model.model, "--json", {a.model.config_path});
  a.model.apply_threads();
  Engine engine = Engine::load(a.model.model);
  nlohmann::json report = {{"model", a.model.model}, {"executor", a.model.reference ? "reference" : "fast"},
                           {"nodes_in_model", engine.node_count()}, {"results", nlohmann::json::array()}};
  for (int64_t batch : a.model.batches) report["results"].push_back(bench_one(engine, a, batch));

  std::printf("%s (%zu nodes, %s executor)\n", a.model.model.c_str(), engine.node_count(),
              a.model.reference ? "reference" : "fast");
  // samples/s: rows of the batch per second (a run of batch 8 is 8 samples).
  std::printf("%6s %6s %14s %9s %9s %9s %8s %10s\n", "batch", "seq", "samples/s", "p50 ms", "p90 ms", "p99 ms",
              "kernels", "peak RSS");
  for (const auto& r : report["results"])
    std::printf("%6lld %6lld %14.1f %9.2f %9.2f %9.2f %8zu %7.0f MiB\n", r["batch"].get<long long>(),
                r["seq"].get<long long>(), r["throughput_per_s"].get<double>(), r["latency_ms"]["p50"].get<double>(),
                r["latency_ms"]["p90"].get<double>(), r["latency_ms"]["p99"].get<double>(),
                r["kernels_per_inference"].get<size_t>(), r["peak_rss_bytes"].get<double>() / (1 << 20));
  for (const auto& r : report["results"])
    if (r.contains("packed"))
      std::printf("%6lld %6lld packed: %.1f samples/s, %.0f useful tokens/s (padded: %.0f, padding %.0f%%), p50 %.2f ms\n",
                  r["batch"].get<long long>(), r["seq"].get<long long>(), r["packed"]["throughput_per_s"].get<double>(),
                  r["packed"]["useful_tokens_per_s"].get<double>(), r["useful_tokens_per_s"].get<double>(),
                  100 * r["padding"].get<double>(), r["packed"]["latency_ms"]["p50"].get<double>());
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << report.dump(2) << "\n";
    f.close();  // a full disk fails the write or the close, not the open
    if (!f) throw Error("cannot write " + a.json_path);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure throughput and latency per batch size");
  args->model.add_to(*cmd, {.batch = DimFlags::Batch::List,
                            .batch_help = "Batch sizes, e.g. 1,8,32",
                            .seq_help = "Binds the non-batch symbolic dimensions"});
  cmd->add_option("--seconds", args->seconds, "Timed duration per batch size")->check(positive_number());
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(non_negative_number());
  cmd->add_option("--json", args->json_path, "Write the results as JSON")->check(writable_file());
  cmd->callback([args] { bench(*args); });
}

}  // namespace fusor::cli
