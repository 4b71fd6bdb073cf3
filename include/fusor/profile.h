// The profiler: where one inference spends its time, per kernel and per op type, set against
// the machine's measured ceilings (copy bandwidth, large-sgemm GFLOP/s) as a roofline.
//
//   auto ceilings = fusor::machine_ceilings({});          // measured once, then cached
//   auto report = fusor::profile_model(engine, dims, {.runs = 10}, ceilings);
//   std::cout << fusor::profile_table(report);
//
// Times are medians over the profiled runs (after warm-up) of the per-inference sum of a
// kernel's (or op's) steps; FLOPs and bytes come from the cost model (src/profile/cost.h), so
// they describe the op's ideal work. docs/profile.md explains every field.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fusor/decoder.h"
#include "fusor/engine.h"

namespace fusor {

// The machine's ceilings; every efficiency figure is a fraction of them.
struct Ceilings {
  double copy_gbps = 0;     // 1e9 bytes/s read + written by an OpenMP parallel copy of big arrays
  double sgemm_gflops = 0;  // 1e9 FLOP/s of a large square f32 matmul (oneDNN, packed weights)
  std::string cpu;          // CPU model name, part of the cache key
  int threads = 0;          // compute threads during the measurement, part of the cache key
  bool quick = false;       // measured with small arrays and matrices
  bool cached = false;      // read from the cache rather than measured by this call
  // Machine balance, FLOPs per byte: ops with a lower arithmetic intensity are memory-bound.
  double balance() const { return copy_gbps > 0 ? sgemm_gflops / copy_gbps : 0.0; }
};

struct CeilingOptions {
  bool remeasure = false;  // ignore (and then refresh) the cached entry
  bool quick = false;      // 16 MiB copies and 512^3 sgemm: well under a second, less exact
  // Where ceilings.json lives; empty: $FUSOR_CACHE_DIR, else $XDG_CACHE_HOME/fusor, else
  // ~/.cache/fusor. A cache that cannot be written is skipped, not an error.
  std::string cache_dir;
  std::function<void(const std::string&)> progress;  // called with one line per measurement
};

// Cached by CPU model + thread count (+ quick); measures and stores on a miss.
Ceilings machine_ceilings(const CeilingOptions& options = {});

// "model name" from /proc/cpuinfo, or "unknown-cpu": the CPU the ceilings (and a tuned record) belong to.
std::string cpu_model();

struct ProfileOptions {
  std::string model;       // reported as given
  int64_t batch = 1;       // reported; samples per inference in throughput_per_s
  int64_t seq = 0;         // reported (0: the model has no length to bind)
  int runs = 10;           // profiled runs
  int warmup = 2;          // untimed runs first
  bool by_shape = false;   // kernel rows split by bound shapes ("kernel [in] x [in] -> [out]")
  SessionOptions session;  // reference kernels, memory modes
};

// One row per kernel name or per op type. Time is per inference.
struct ProfileRow {
  std::string name;        // kernel name ("matmul_f32_onednn_packed"), with shapes when
                           // ProfileOptions::by_shape, or op type ("MatMul")
  std::string op;          // op type(s) the kernel ran for, "+"-joined when several
  int64_t calls = 0;       // steps per inference
  double time_ms = 0;      // median over runs of the per-inference sum
  double share = 0;        // of the sum of all steps' time
  double bytes_read = 0, bytes_written = 0, flops = 0;  // per inference
  double gbps = 0, gflops = 0;                           // achieved
  double intensity = 0;                                  // FLOPs per byte
  std::string bound;                                     // "memory" or "compute"
};

// One step of one profiled run: a Chrome trace "X" event.
struct TraceEvent {
  std::string kernel, op, node, shapes;
  int run = 0;
  double ts_us = 0, dur_us = 0;  // from the start of the first profiled run
};

struct ProfileReport {
  std::string model;
  int64_t batch = 0, seq = 0;
  int runs = 0, warmup = 0, threads = 0;
  size_t nodes_in_model = 0;         // nodes in the ONNX file, Constant nodes included
  size_t kernels_per_inference = 0;  // steps in the plan
  size_t kernels_unfused = 0;        // steps the same plan has with every fusion pass off
  // Why the model is planned per run (a shape depends on input values, and every run with new
  // values plans again with all of them folded), or "" when one plan serves every run.
  std::string planned_per_run;
  std::vector<ProfileRow> kernels;   // sorted by time, descending
  std::vector<ProfileRow> ops;       // sorted by time, descending
  struct FusedItem {
    std::string name, kind, pass;
    std::vector<std::string> nodes;  // source nodes it replaced
    size_t bytes_saved = 0;          // intermediate bytes per inference no longer written and read
  };
  struct Declined {
    std::string pass;
    std::vector<std::string> nodes;
    std::string reason;
  };
  std::vector<FusedItem> fusion_items;  // the plan's fusion items, by stable name
  std::vector<Declined> not_fused;      // fusion opportunities not taken, each with its reason
  Ceilings ceilings;
  double latency_ms = 0;          // median wall time of one inference
  double steps_ms = 0;            // median of the per-run sum of step times
  double model_flops = 0;         // per inference (the whole batch)
  double model_bytes = 0;         // per inference, read + written, summed over steps
  double inferences_per_s = 0;    // 1000 / latency_ms
  double throughput_per_s = 0;    // samples per second: batch * inferences_per_s
  double compute_efficiency = 0;  // model_flops * inferences_per_s / sgemm ceiling
  Session::MemoryStats memory{};
  std::vector<TraceEvent> trace;  // every step of every profiled run
};

// Builds a session for `input_dims`, runs warm-up and profiled runs on sample inputs, and
// aggregates. Throws fusor::Error on bad shapes or options (runs < 1).
ProfileReport profile_model(const Engine& engine, const std::map<std::string, Dims>& input_dims,
                            const ProfileOptions& options, const Ceilings& ceilings);

// The report as JSON (docs/profile.md lists the keys).
std::string profile_json(const ProfileReport& report);
// Chrome trace JSON ({"traceEvents": [...]}) for Perfetto or chrome://tracing.
std::string chrome_trace_json(const ProfileReport& report);
// Terminal table: the `top` slowest kernels, the per-op summary, then totals and efficiency.
std::string profile_table(const ProfileReport& report, size_t top = 15);

// A decoder's step profile (DecoderBatch::set_profiling) as `fusor generate --profile` prints
// it: per kind of step its runs and time, then its `top` kernels by time and the rest summed.
std::string generation_profile_table(const GenerationProfile& profile, size_t top = 15);

}  // namespace fusor
