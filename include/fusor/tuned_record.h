// What fusor tune measured, kept in the `tuned:` section of the tuned.yaml it writes (the rest
// of that file is the config fusor serve reads). fusor plan and the onboard report read it back:
// every capacity they state comes from these measurements, never from a guess.
//
//   tuned:
//     model: models/minilm-l6/model.onnx
//     model_hash: 9c0f...                 # FNV-1a 64 of the model file (fusor/check.h)
//     machine: "AMD EPYC, 2 threads"
//     threads: 2                          # cores one instance uses
//     request: {input_ids: [1, 32], attention_mask: [1, 32], token_type_ids: [1, 32]}
//     arrivals: poisson                   # or trace:PATH
//     lengths: [8, 128]                   # with --lengths: uniform request lengths
//     packed: true                        # the model packs: token budgets were swept
//     generative: true                    # a decoder: see below
//     output_tokens: 64                   # generative: tokens each request generates
//     duration_s: 4                       # per measured point
//     interrupted: false                  # true: stopped early, the best found so far
//     classes:
//       - name: interactive
//         slo: {p99_ms: 20}               # or {throughput: true, p99_ms: 2000}
//         capacity_qps: 131.5             # highest offered rate measured within the SLO
//         chosen: {batch_window_ms: 2, max_batch: 4, execution_contexts: 1}
//                                         # a model that packs adds max_batch_tokens: 1024
//         candidates:                     # every measured setting, the chosen one included
//           - setting: {batch_window_ms: 2, max_batch: 4, execution_contexts: 1}
//             predicted_qps: 140          # the simulator's capacity, which picked it for measuring
//             capacity_qps: 131.5
//             curve:                      # ascending offered rate
//               - {offered_qps: 66, achieved_qps: 65.8, p50_ms: 9.1, p99_ms: 14.2, utilisation: 0.42,
//                  mean_batch: 1.3, errors: 0, useful_tokens_per_s: 2100, padding: 0.02,
//                  bucket_padding: 0.1}
//     baseline:                           # the default: no fusion, no reuse, no batching
//       name: interactive
//       ...                               # a class record as above
//   A decoder's classes are tuned by generation: a setting is {step_tokens, max_running,
//   prefill_chunk}, its slo may hold ttft_p99_ms and itl_p99_ms, a class adds
//   capacity_tokens_per_s, and each curve point adds ttft_p50_ms, ttft_p99_ms, itl_p50_ms,
//   itl_p99_ms and output_tokens_per_s (p50_ms and p99_ms are then whole requests'). It has no
//   matrix.
//     matrix:                             # service time per batch size and fusion option, and
//                                         # the evidence of the choice (rounds against all)
//       - {rows: 1, option: all, ms: 9.8, chosen: true, rounds: 8, wins: 0, ratio: 1, ratio_mad: 0}
//       - {rows: 1, option: no-attention, ms: 10.1, chosen: false, rounds: 8, wins: 2, ratio: 1.03,
//          ratio_mad: 0.02}
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/tensor.h"

namespace fusor::tune {

// One measured point of an open-loop run at a fixed offered rate.
struct CurvePoint {
  double offered_qps = 0;   // the arrival rate sent
  double achieved_qps = 0;  // answered requests per second
  double p50_ms = 0, p99_ms = 0;  // latency from each request's scheduled arrival to its answer
  double utilisation = 0;   // compute time / (wall time x execution contexts), 0..1
  double mean_batch = 0;    // requests per executed batch
  int64_t errors = 0;       // requests answered with an error (503: queue full, timed out)
  // Tokens (rows x length): the requests' own per second of the span, and the share of the
  // tokens computed that was padding (packed: the plan's filler; padded: the length buckets' and
  // batch buckets' padding), and the share length buckets alone would have padded. Records
  // written before these fields read 0.
  double useful_tokens_per_s = 0, padding = 0, bucket_padding = 0;
  // Generative models (a decoder served by continuous batching): p50_ms / p99_ms are then the
  // whole request's latency; these are its first token's (from the scheduled arrival), the gaps
  // between its later tokens, and the tokens generated per second of the run. 0 for encoders.
  double ttft_p50_ms = 0, ttft_p99_ms = 0, itl_p50_ms = 0, itl_p99_ms = 0, output_tokens_per_s = 0;
};

// A class's objective: p99 within p99_ms; `throughput` classes maximise rate with p99_ms only as
// a bound against unbounded queueing.
// A generative class adds targets for the first token and the gaps between tokens (p99 each; 0:
// none), and its p99_ms (the whole request) may then be 0: no bound.
struct Slo {
  double p99_ms = 0;
  bool throughput = false;
  double ttft_p99_ms = 0, itl_p99_ms = 0;
};

// Whether a measured point holds an SLO: every request answered, each p99 the SLO bounds within
// its target, and the offered rate carried (at least 95% of it; an open-loop run that falls
// behind queues forever). The double form bounds p99_ms alone.
bool meets(const CurvePoint& p, const Slo& slo);
bool meets(const CurvePoint& p, double p99_ms);
// Whether a point had errors or fell behind its offered rate (meets' first two conditions failed).
bool overloaded(const CurvePoint& p);
// How many leading points of a curve (ascending offered rate) capacity may rest on: through the
// highest point that meets the SLO itself where the curve's trend (slo_load_trend) is still within
// it, and before the first point with errors. One run's p99 is noisy, so single points decide
// nothing against their neighbours: a lucky sample above slower rates is pooled with them and
// cannot raise the capacity unless they average within the target, and one slow sample at a low
// rate does not hide the faster rates above it. A point that only fell behind the offered rate
// ends nothing either, but capacity never rests on one: a short run's count of answers is noisy
// by a few arrivals, and a setting that carries a rate carries every lower one. Tune's capacity
// at its SLO and plan's at any --p99 both follow this rule.
size_t good_prefix(const std::vector<CurvePoint>& curve, const Slo& slo);
// The highest offered rate of the good prefix; 0 when it is empty.
double measured_capacity(const std::vector<CurvePoint>& curve, const Slo& slo);
double measured_capacity(const std::vector<CurvePoint>& curve, double p99_ms);
// How close a point runs to its SLO: the largest of measured p99 / target over the targets the
// SLO sets (0 when it sets none). Below 0.5 the search climbs fast.
double slo_load(const CurvePoint& p, const Slo& slo);
// Values made non-decreasing in order (isotonic regression: adjacent values that contradict each
// other are replaced by their mean), as latency is under growing load.
std::vector<double> nondecreasing_fit(const std::vector<double>& values);
// Each point's slo_load, fitted non-decreasing in offered rate.
std::vector<double> slo_load_trend(const std::vector<CurvePoint>& curve, const Slo& slo);
// The point a curve's latencies are read at: the one its measured capacity came from, the last
// of the good prefix (of two runs that offered one rate, the one that met the SLO); null when no
// point met the SLO, for a setting without capacity has no figures "at capacity".
const CurvePoint* capacity_point(const std::vector<CurvePoint>& curve, const Slo& slo);

struct Setting {
  double batch_window_ms = 0;
  int64_t max_batch = 1;
  int64_t execution_contexts = 1;
  int64_t max_batch_tokens = 0;  // packed serving: a batch closes on this many real tokens; 0: not packed
  // Generative serving (0 for encoders): the scheduler's step budget (serve.step_tokens), the
  // class's sequences running at once (max_running) and the prompt tokens it adds to one step
  // (prefill_chunk; 0: the step's budget).
  int64_t step_tokens = 0, max_running = 0, prefill_chunk = 0;
  bool operator==(const Setting&) const = default;
};

struct Candidate {
  Setting setting;
  double predicted_qps = 0;  // the simulator's capacity estimate
  double capacity_qps = 0;   // measured: highest offered rate within the SLO (0: none was)
  std::vector<CurvePoint> curve;  // ascending offered_qps
};

// The lowest slo_load of a candidate's points that answered every request (infinity: none did).
double closest_slo_load(const Candidate& c, const Slo& slo);

struct ClassRecord {
  std::string name;
  Slo slo;
  double capacity_qps = 0;
  double capacity_tokens_per_s = 0;  // generative: tokens generated per second at capacity_qps
  Setting chosen;
  std::vector<Candidate> candidates;

  const Candidate* chosen_candidate() const;  // the candidate whose setting is `chosen`, or null
  // Chooses the candidate of the highest measured capacity (on a tie, the higher prediction), or
  // when none met the SLO, the one that came closest (closest_slo_load): sets `chosen` and
  // capacity_qps; no candidates leave both as they are.
  void choose_best();
};

// One fusion option at one batch size. The options ran in alternated rounds; the evidence
// compares each with the kept plan (the first option, "all"), whose own row reads ratio 1, no
// wins. Records written before the rounds existed read rounds 0 (no evidence).
struct MatrixTiming {
  int64_t rows = 1;
  std::string option;  // a fusion option's name: all, no-attention, no-gemm-epilogue, none
  double ms = 0;       // median service time of one batch of `rows` rows, over the rounds
  bool chosen = false;
  int64_t rounds = 0;    // rounds timed
  int64_t wins = 0;      // rounds in which it ran faster than the kept plan
  double ratio = 1;      // median per-round time ratio to the kept plan (0.9: 10% faster)
  double ratio_mad = 0;  // the noise: median absolute deviation of those per-round ratios
};

struct TunedRecord {
  std::string model, model_hash, machine;
  int threads = 1;
  std::map<std::string, Dims> request;  // one request's input dims
  std::string arrivals = "poisson";
  int64_t min_length = 0, max_length = 0;  // --lengths: uniform request lengths; 0: the request's own
  bool packed = false;                     // the model packs: classes were tuned by token budget
  // A decoder, tuned by generation (continuous batching): each request is a prompt of `lengths`
  // tokens (or the request's seq) generating output_tokens tokens; rates are requests/s.
  bool generative = false;
  int64_t output_tokens = 0;
  double duration_s = 0;
  bool interrupted = false;
  std::vector<ClassRecord> classes;
  std::optional<ClassRecord> baseline;
  std::vector<MatrixTiming> matrix;

  const ClassRecord* find(const std::string& cls) const;  // null when absent
};

// tuned.yaml: config_yaml(config) followed by the record's `tuned:` section.
std::string tuned_yaml(const Config& config, const TunedRecord& record, const std::string& header_comment);
// Reads the `tuned:` section of a tuned.yaml; throws fusor::Error with "PATH: ..." (one line)
// when the file is missing, has no such section, or a field has the wrong type.
TunedRecord load_tuned_record(const std::string& path);
TunedRecord parse_tuned_record(const std::string& yaml_text, const std::string& source_name);

}  // namespace fusor::tune
