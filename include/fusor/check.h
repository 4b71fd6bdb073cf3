// The precision gate: every fusion item of the optimized plan is checked against what the model
// computes without it, and rolled back when it is wrong (docs/check.md).
//
//   fusor::CheckOptions o;
//   o.dims = engine.bind_dims({}, 1, 16);
//   fusor::CheckReport r = fusor::run_precision_gate(engine, o);  // r.rolled_back, r.passed
//
// Invariants:
// - The gate never changes a kept item's numbers: a plan that passes is the plan that runs.
// - An item is rolled back only when it differs from the unfused plan beyond the mode's tolerance
//   AND is further from the truth (reference kernels, float64) than the unfused plan is; a
//   NaN/Inf on one side only always fails. Rollbacks join fusion.disabled by the item's name.
// - A verdict is keyed by the model file's content hash and the fusion config it was checked
//   with; run, bench, profile, optimize and serve apply it (apply_precision_verdict).
// The tiers and the sample set are explained in src/check/gate.h.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fusor/config.h"
#include "fusor/engine.h"
#include "fusor/packed.h"
#include "fusor/tensor.h"

namespace fusor {

// ---- comparison rules (the per-mode table is in src/check/compare.h and docs/check.md)

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1.3e-6;
  int64_t max_ulp = 64;
  // int8/uint8 values may differ by this many quantization steps (1 for the output of a fused
  // QDQ unit, which rounds once where its native graph rounds a float result), in at most one
  // element of kMaxSteppedPer (check/compare.h); other integers must be equal.
  int64_t quantization_steps = 0;
};
Tolerance tolerance_for(PrecisionCheck mode);

// How far `actual` is from `expected`, and where it is worst.
struct Difference {
  double max_abs = 0;
  double max_rel = 0;        // |a - b| / |b| at the worst element (0 where b == 0)
  int64_t max_ulp = 0;
  int64_t worst_index = -1;  // flat index of the element with the largest |a - b|, -1 if none
  bool nonfinite_mismatch = false;
  bool shape_mismatch = false;
  bool within = true;        // every element passes the tolerance
  int64_t failing = 0;       // elements outside the tolerance
  int64_t first_failing = -1;  // flat index of the first of them, -1 if none
};

// ---- the gate

struct CheckOptions {
  PrecisionCheck mode = PrecisionCheck::Strict;
  FusionConfig fusion;                    // the switches of the plan being checked
  std::map<std::string, Dims> dims;       // bound input shapes
  std::vector<std::map<std::string, Tensor>> samples;  // empty: generated (see gate.cc)
  bool edge_cases = true;                 // add tier-4 edge-case samples
  // Fused is "further from the truth" when its error exceeds native's by this factor, plus atol/10
  // and 16 ULP of the output's largest magnitude (order-of-summation noise).
  double margin = 1.25;
  std::string inject_fault;               // "KIND[@item]", empty for none
  // Other input shapes to check the settled plan at (sequence length 1, the largest batch).
  std::vector<std::map<std::string, Dims>> edge_dims;
  // Per model output, a tolerance other than the mode's (tiers 3 and 4).
  std::map<std::string, Tolerance> output_tolerances;
  int max_rounds = 8;
  std::function<void(const std::string&)> progress;
  // Also check packed execution (fusor/packed.h) on models that pack, at lengths up to the
  // bound sequence length; a failure rolls packing back (kPackingItem joins rolled_back).
  bool check_packing = true;
  // Also check decoding over the paged KV cache (fusor/decoder.h) on decoder exports; a failure
  // rolls it back (kCacheAttentionItem, "kv_cache", joins rolled_back and final_fusion.disabled).
  // The item needs the model file: DecoderSpec::describe reads the configs beside it. Empty:
  // the item is reported not applicable.
  bool check_kv_cache = true;
  std::string model_file;
};

// What the gate decided for one fusion item. The names are an item's "status" in
// `fusor check --report` JSON, which the onboard report reads back; nothing else spells them.
enum class ItemStatus {
  Kept,        // within tolerance (or no further from the truth than native): stays fused
  RolledBack,  // failed: added to fusion.disabled, the plan is rebuilt without it
};

constexpr const char* item_status_name(ItemStatus s) {
  switch (s) {
    case ItemStatus::Kept: return "kept";
    case ItemStatus::RolledBack: return "rolled_back";
  }
  return "?";
}

constexpr std::optional<ItemStatus> item_status_from_name(std::string_view name) {
  for (ItemStatus s : {ItemStatus::Kept, ItemStatus::RolledBack})
    if (name == item_status_name(s)) return s;
  return std::nullopt;
}

struct ItemVerdict {
  std::string name, kind;
  int tier = 1;                 // the tier that decided the verdict
  std::string sample;           // the sample it was decided on
  Difference vs_native;         // fused against the unfused body
  double native_vs_truth = 0;   // max abs error of native against the truth
  double fused_vs_truth = 0;    // max abs error of fused against the truth
  double threshold = 0;         // atol + rtol * |native| at the worst element
  ItemStatus status = ItemStatus::Kept;
  int round = 0;                // the gate round that decided it
};

struct OutputVerdict {
  std::string name, sample;
  Difference vs_native, vs_truth, native_vs_truth;
  // A quantized model whose output misses native: native replayed with the fused run's
  // quantization decisions (every QuantizeLinear and DynamicQuantizeLinear result), compared
  // under the same tolerance (docs/check.md, "Quantized models").
  std::optional<Difference> vs_native_pinned;
  bool passed = true;
};

// ---- packing (padding-free execution, fusor/packed.h), checked like a fusion item: requests of
// mixed lengths (1, 2, the longest and one short of it, left- and right-padded, two rows) run in
// one packed step, and each must match the same request run alone: tier 1 against the fast
// padded plan, tier 3 against the reference kernels, both under the twin rule 1e-5 + 1e-4 |b|.

struct PackingCheckOptions {
  int64_t max_length = 128;  // the longest request checked
  FusionConfig fusion;       // the switches of the packed and the padded fast plans
  uint64_t seed = 0;
};

struct PackingVerdict {
  bool packable = false;
  std::string reason;                 // why the model does not pack (nothing was checked then)
  bool passed = false;
  std::vector<std::string> requests;  // what was checked, e.g. "128 tokens, left-padded 42"
  Difference vs_padded;               // tier 1, the worst request
  Difference vs_truth;                // tier 3, the worst request
  std::string worst_request;          // where vs_padded was worst
};

PackingVerdict check_packing(const Engine& engine, const PackingCheckOptions& options);

// ---- the KV cache (decoding over a paged pool, fusor/decoder.h), checked like a fusion item:
// three sequences with prompts of 1, 17 (over a 16-position block) and min(context - 8, 40)
// tokens join a DecoderBatch at steps 0, 2 and 3 and decode 6 teacher-forced tokens each, several
// sequences per step. Every step's last-token logits must match the same sequence run alone
// through the plain loop with fusion off (the unfused plan): tier 1 in fast kernels, tier 3 with
// both sides in reference kernels, under the twin rule 1e-5 + 1e-4 |b| (as packing).

struct KvCacheCheckOptions {
  FusionConfig fusion;  // the switches of the cached side
  // Tests only: changes the cached side's logits of (sequence, step) before they are compared,
  // a stand-in for a wrong CachedAttention kernel (the gate's fault kinds wrap fused steps, and
  // CachedAttention runs inside DecoderBatch's own plans).
  std::function<void(int sequence, int step, std::span<float> logits)> corrupt_cached;
};

struct KvCacheVerdict {
  bool applicable = false;             // the model is a decoder export DecoderSpec::describe accepts
  bool cached = false;                 // DecoderBatch accepts its attention (nothing checked if not)
  std::string reason;                  // why not applicable, or DecoderBatch's refusal
  bool passed = false;                 // meaningful when cached
  std::vector<std::string> sequences;  // what was checked, e.g. "prompt 17, joins at step 2, 6 steps"
  int64_t steps_compared = 0;          // logits compared per tier
  Difference vs_unfused;               // tier 1, the worst step
  Difference vs_truth;                 // tier 3, the worst step
  std::string worst;                   // where vs_unfused was worst: "sequence 2, step 4"
};

// `model_file` is the file `engine` was loaded from.
KvCacheVerdict check_kv_cache(const Engine& engine, const std::string& model_file, const KvCacheCheckOptions& options);

struct CheckReport {
  bool passed = false;
  std::string mode;
  std::vector<ItemVerdict> items;
  std::vector<std::string> rolled_back;
  std::vector<OutputVerdict> outputs;  // tier 3/4 of the final plan
  std::vector<std::string> samples;    // sample names, in order
  std::string injected_into;           // the item a fault went into, if any
  std::vector<std::string> skipped_edge_shapes;  // "NAME=[dims]: why": edge shapes the model does not take
  int rounds = 0;
  FusionConfig final_fusion;           // the checked config with the rollbacks in fusion.disabled
  std::optional<PackingVerdict> packing;  // when options.check_packing
  std::optional<KvCacheVerdict> kv_cache; // when options.check_kv_cache
};

CheckReport run_precision_gate(const Engine& engine, const CheckOptions& options);

std::string check_report_json(const CheckReport& report);
std::string check_report_junit(const CheckReport& report);

// ---- deliberately wrong fused kernels, to prove the gate catches them (fusor check --inject-fault)
//   wrong_epsilon, dropped_bias, reduced_precision, off_by_one_mask, stale_buffer (src/check/faults.h)

std::vector<std::string> fault_kinds();

struct FaultSpec {
  std::string kind;
  std::string item;  // empty: the first fused step the kind applies to
};
// Parses "KIND[@item]"; throws fusor::Error naming the known kinds for an unknown one.
FaultSpec parse_fault(const std::string& text);
// The fusion items that fault `kind` fits in the plan `fusion` makes at `dims`, in plan order (a
// KIND without @item goes into the first): what an @item may name. Nothing when the plan depends
// on input values and so is only made at a run (docs/architecture.md).
std::optional<std::vector<std::string>> fault_targets(const Engine& engine, const std::map<std::string, Dims>& dims,
                                                      const FusionConfig& fusion, const std::string& kind);

// ---- the saved verdict
// The precision gate's verdict, saved beside the model so that run, bench, profile and serve
// apply it without checking again: the items rolled back for one model file (by content hash)
// and one fusion config (by its switches and mode). The file is MODEL.fusor-verdicts.json, one
// entry per config; when the model's folder is not writable, the same file name under the
// cache folder (FUSOR_CACHE_DIR, XDG_CACHE_HOME/fusor, ~/.cache/fusor). The file also keeps the
// size, mtime and ctime of the model and of its external data files: while they are unchanged, loading
// trusts the saved hash instead of reading the whole model again.

struct Verdict {
  std::string model_hash;  // FNV-1a 64 of the model file's bytes and its external data files', hex
  std::string config_key;  // the fusion switches, disabled list and mode it was checked with
  bool passed = false;
  std::vector<std::string> rolled_back;
  std::string evidence;  // what it was checked on ("samples DIR", "generated samples"), for messages
};

std::string model_file_hash(const std::string& model_path);
std::string verdict_config_key(const FusionConfig& fusion);

std::optional<Verdict> load_verdict(const std::string& model_path, const FusionConfig& fusion);
// `fresh` with the rollbacks of the saved verdict for the same model and config added, so that a
// later check on weaker evidence (fewer or gentler samples) cannot fuse again an item an earlier
// one rolled back. `kept`: the rollbacks added, and the saved verdict's evidence.
Verdict keep_saved_rollbacks(const std::string& model_path, Verdict fresh, std::vector<std::string>& kept,
                             std::string& kept_from);
// Returns the path written; throws fusor::Error when neither place can be written.
std::string save_verdict(const std::string& model_path, const Verdict& verdict);
// The external data files an ONNX model's tensors name (their `location`), as paths beside the
// model: what a verdict's hash covers besides the model file, and what a command must not write
// over. Empty when the model names none or does not parse.
std::vector<std::string> model_data_files(const std::string& model_path);

// What run, bench, profile and serve do with `fusion.precision_check`: with `off`, nothing; else
// the saved verdict's rollbacks join fusion.disabled. When there is none and `gate_if_missing`,
// the gate runs first on generated samples at `gate_dims` (empty: batch 1, seq 16), and its
// verdict is saved. Throws fusor::Error when the gate's final plan still fails, or when the model
// cannot run at those dims (an audio model's samples), saying how to save a verdict instead.
void apply_precision_verdict(const Engine& engine, const std::string& model_path, FusionConfig& fusion,
                             bool gate_if_missing, const std::function<void(const std::string&)>& progress = {},
                             const std::map<std::string, Dims>& gate_dims = {});

}  // namespace fusor
