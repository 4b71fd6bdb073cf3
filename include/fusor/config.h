// The YAML config file: one switch per optimization, parsed and validated strictly. Every key
// is optional and has the default below; an empty file means all defaults. docs/config.md is the
// reference, and says which keys take effect today and which only parse and validate until the
// component that reads them exists.
//
//   fusion:
//     fuse_elemwise: true            # one bool per fusion switch (fusor/fusion_switches.h)
//     fuse_norm_act: true
//     fuse_gemm_epilogue: true
//     fuse_attention: true
//     merge_projections: true
//     precision_check: strict        # strict | relaxed | off
//     disabled: []                   # fusion item names, e.g. [layer3.attention]
//   kernel:
//     reorder_for_coalesce: true
//   batch_window_ms: 8               # non-negative number, at most kMaxConfigMs
//   mem_reuse: true
//   fold_constants: true
//   serve:                           # fusor serve only; docs/serve.md
//     default_class: default
//     execution_contexts: 1          # positive integer, at most kMaxExecutionContexts
//     max_body_bytes: 67108864       # positive integer
//     seq_bucket: 16                 # positive integer; counts: at most kMaxConfigCount
//     pad_values: {attention_mask: 0}
//     classes:                       # name -> class; absent: one class "default"
//       interactive: {batch_window_ms: 1, adaptive_window: true, max_batch: 4,
//                     preferred_batch_sizes: [1, 2, 4], priority: 0, timeout_ms: 1000,
//                     max_queue_size: 64, max_running: 8, prefill_chunk: 256,
//                     prefill_chunk_contended: 32,
//                     ttft_target_ms: 200, itl_target_ms: 50}
//     max_sequences: 32              # generative serving (a decoder): sequences running at once
//     step_tokens: 256               # tokens per scheduler step
//     kv_cache_tokens: 4096          # the paged KV cache's capacity (absent: 8 x context)
//     matrix:                        # fusion per batch-size bucket; absent: fusion: for all
//       - {max_batch: 1, fusion: {fuse_attention: false}}
//       - {max_batch: 32, fusion: {disabled: [layer0.attention]}}
//   tuned: {...}                     # written by fusor tune, read by fusor plan (src/tune);
//                                    # must be a mapping, otherwise not read here
//
// Invariants of a Config returned by load_config/parse_config: every duration is within
// 0..kMaxConfigMs, every token, row, request and sequence count within 1..kMaxConfigCount (0.. where 0 means none); fusion.disabled holds non-empty names without whitespace, each once, in file order;
// serve.classes is never empty, holds serve.default_class, and every class has max_batch >= 1,
// max_queue_size >= 1 and preferred_batch_sizes ascending, each within 1..max_batch;
// serve.matrix has strictly ascending max_batch >= 1, each entry's fusion fully resolved.
// Anything else in the file (an unknown or duplicate key, a wrong type or value, a YAML syntax
// error, more than one document) throws fusor::Error with a one-line message that starts with
// "SOURCE:LINE:COLUMN: " and names the key path; no other exception escapes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fusor/fusion_switches.h"

namespace fusor {

// How the precision gate treats fusion items that change the numbers.
enum class PrecisionCheck {
  Strict,   // compare each item with the reference, roll back any beyond the strict tolerance
  Relaxed,  // the same comparison with the looser tolerance
  Off,      // no comparison
};
const char* precision_check_name(PrecisionCheck p);  // "strict", "relaxed", "off"

struct FusionConfig {
  // One bool per row of FUSOR_FUSION_SWITCHES (fusor/fusion_switches.h), all on by default:
  // fuse_elemwise, fuse_norm_act, fuse_gemm_epilogue, fuse_attention, ...
#define FUSOR_SWITCH_MEMBER(member, label, passes, description) bool member = true;
  FUSOR_FUSION_SWITCHES(FUSOR_SWITCH_MEMBER)
#undef FUSOR_SWITCH_MEMBER
  PrecisionCheck precision_check = PrecisionCheck::Strict;
  std::vector<std::string> disabled;  // fusion item names (e.g. "layer3.attention") never fused

  bool operator==(const FusionConfig&) const = default;
};

// One row of FUSOR_FUSION_SWITCHES, with its member as a pointer so code can loop over switches.
struct FusionSwitch {
  std::string_view key;          // the member's name and the YAML key inside `fusion:`
  bool FusionConfig::*member;
  std::string_view label;        // short name in verdict keys and logs
  std::string_view passes;       // the pipeline passes it switches, space-separated
  std::string_view description;
};

inline constexpr FusionSwitch kFusionSwitches[] = {
#define FUSOR_SWITCH_ROW(member, label, passes, description) {#member, &FusionConfig::member, label, passes, description},
    FUSOR_FUSION_SWITCHES(FUSOR_SWITCH_ROW)
#undef FUSOR_SWITCH_ROW
};

// Whether `s` switches the pipeline pass named `pass`.
bool switches_pass(const FusionSwitch& s, std::string_view pass);
// Sets every switch of `f` to `on` (precision_check and disabled stay).
void set_every_switch(FusionConfig& f, bool on);

struct KernelConfig {
  bool reorder_for_coalesce = true;  // order kernels and lay data out for contiguous access

  bool operator==(const KernelConfig&) const = default;
};

// One traffic class of the server's dynamic batcher (docs/serve.md).
struct TrafficClass {
  double batch_window_ms = 8;   // longest a request waits for its batch to fill
  int64_t max_batch = 8;        // rows per batch
  std::vector<int64_t> preferred_batch_sizes;  // batch buckets; empty: powers of two
  int64_t priority = 0;         // lower runs first when several classes have a batch ready
  double timeout_ms = 30000;    // queued longer than this: 503
  int64_t max_queue_size = 256;  // requests queued beyond this: 503
  bool adaptive_window = true;  // close a batch before the window when waiting cannot help
  int64_t max_batch_tokens = 2048;  // packed serving: a batch closes on this many real tokens
  // Generative serving (docs/serve-generate.md): this class's sequences running at once (0: no
  // limit but serve.max_sequences), the most prompt tokens its prefills add to one step (0: the
  // step's budget), that limit while a better class is busy (0: prefill_chunk; busy: a request
  // of it waiting or running, or one arrived within the last second), and its latency targets
  // (0: none; tune and the metrics read them).
  int64_t max_running = 0;
  int64_t prefill_chunk = 0;
  int64_t prefill_chunk_contended = 0;
  double ttft_target_ms = 0;
  double itl_target_ms = 0;

  bool operator==(const TrafficClass&) const = default;
};

// One row of serve.matrix: batches of up to max_batch rows (and more than the previous row's)
// build their sessions with `fusion`: the top-level fusion section with this row's keys over it,
// its disabled list joined to the top-level one. precision_check is always the top level's.
// A row may give max_tokens instead: it then applies to packed plans (serve.packing) of up to
// max_tokens tokens, by the same rules; rows of each kind ascend on their own.
struct MatrixEntry {
  int64_t max_batch = 1;
  FusionConfig fusion;
  int64_t max_tokens = 0;  // > 0: a token-bucket row (max_batch unused)

  bool operator==(const MatrixEntry&) const = default;
};

// serve.execution_contexts' cap. A context is a worker thread per model with its own plans and
// arenas: past the machine's cores more add memory, not speed, and tens of thousands of threads
// failed to start (the process aborted).
inline constexpr int64_t kMaxExecutionContexts = 1024;

// The caps of the file's durations (milliseconds) and of its token, row, request and sequence
// counts: far beyond what a deployment needs, and small enough that what the server computes
// from them cannot overflow (a deadline on the steady clock, a token capacity that doubles).
inline constexpr double kMaxConfigMs = 86'400'000;     // 24 hours
inline constexpr int64_t kMaxConfigCount = 1 << 20;  // 1048576

struct ServeConfig {
  std::string default_class = "default";     // requests without a "class" parameter
  int64_t execution_contexts = 1;             // worker threads, each with its own sessions
  int64_t max_body_bytes = 64 << 20;          // larger HTTP bodies / gRPC messages: 400
  int64_t seq_bucket = 16;                    // sequence lengths pad up to a multiple of this
  // Packed (padding-free) serving of encoders that pack (fusor/packed.h): requests of any length
  // share a batch that closes on the class's max_batch_tokens; plans bind to token counts rounded
  // up to multiples of token_bucket (a coarser step for large batches, serve/packed_cache.h).
  // Off, or for a model that does not pack: length buckets as above.
  bool packing = true;
  int64_t token_bucket = 16;
  // Packed plans for every token capacity up to the classes' largest max_batch_tokens are built
  // before the server reports ready (MiniLM at 2048 tokens: 40 plans, ~4 s, ~420 MB per context);
  // off, each is built when a batch first needs it, and that batch waits for it.
  bool prebuild_plans = true;
  std::map<std::string, double> pad_values;   // input name -> pad value (others pad with 0)
  std::map<std::string, TrafficClass> classes = {{"default", {}}};
  std::vector<MatrixEntry> matrix;            // ascending max_batch; larger batches: top-level fusion
  // Generative serving: sequences running at once, tokens per step (decode tokens plus prefill
  // chunks), and the KV cache's capacity in tokens (0: 8 x the context length).
  int64_t max_sequences = 32;
  int64_t step_tokens = 256;
  int64_t kv_cache_tokens = 0;
  // A step that holds only worse classes' tokens stops when a better class's request arrives,
  // so that request's first token does not wait for it; the stopped tokens run again later.
  bool interrupt_steps = true;

  bool operator==(const ServeConfig&) const = default;
};

struct Config {
  FusionConfig fusion;
  KernelConfig kernel;
  double batch_window_ms = 8;  // how long the server's batcher waits to fill a batch
  bool mem_reuse = true;       // intermediates share arena bytes (SessionOptions::mem_reuse)
  bool fold_constants = true;  // fold constant subgraphs at load
  ServeConfig serve;           // fusor serve; the default class's window is batch_window_ms

  bool operator==(const Config&) const = default;
};

// Reads and parses the file at `path`; messages name it as given. A missing, unreadable or
// oversized (> 1 MiB) file is an error.
Config load_config(const std::string& path);
// Parses YAML text; `source_name` starts every error message (a file name, or "<string>").
Config parse_config(const std::string& yaml_text, const std::string& source_name);
// The config as YAML that parse_config reads back to an equal Config; every key is written.
std::string config_yaml(const Config& config);

}  // namespace fusor
