// Choosing the next token, in transformers' order: the repetition penalty (a logits processor, so
// greedy decoding gets it too), then when sampling the warpers temperature, top-k, top-p, and a
// draw from the softmax of what is left.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "fusor/error.h"
#include "fusor/generate.h"

namespace fusor {

void SamplingOptions::validate() const {
  // Written as !(x > 0) so that NaN fails too.
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw Error("temperature must be a positive number", ErrorKind::InvalidArgument);
  if (top_k < 0) throw Error("top-k must be 0 (off) or positive", ErrorKind::InvalidArgument);
  if (!(top_p > 0 && top_p <= 1)) throw Error("top-p must be in (0, 1]", ErrorKind::InvalidArgument);
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty))
    throw Error("repetition penalty must be a positive number", ErrorKind::InvalidArgument);
}

SamplingOptions sampling_with_defaults(const SamplingKnobs& knobs, const GenerationDefaults& defaults, uint64_t seed) {
  SamplingOptions s;
  const std::optional<double> temperature = knobs.temperature ? knobs.temperature : defaults.temperature;
  const bool asked = knobs.temperature || knobs.top_k || knobs.top_p;
  s.do_sample = temperature.value_or(1.0) != 0 && (asked || defaults.do_sample.value_or(false));
  if (s.do_sample && temperature) s.temperature = static_cast<float>(*temperature);
  if (const auto top_k = knobs.top_k ? knobs.top_k : defaults.top_k) s.top_k = *top_k;
  if (const auto top_p = knobs.top_p ? knobs.top_p : defaults.top_p) s.top_p = static_cast<float>(*top_p);
  if (const auto penalty = knobs.repetition_penalty ? knobs.repetition_penalty : defaults.repetition_penalty)
    s.repetition_penalty = static_cast<float>(*penalty);
  s.seed = seed;
  return s;
}

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) { options_.validate(); }

namespace {

// The first index of the largest score, as torch.argmax on finite scores (a NaN never wins; all
// NaN gives 0). The maximum is kept in eight lanes, a loop the compiler vectorizes, and then
// found: std::max_element's scalar compare chain was ~8 us of a served step per sequence on an
// 8192-token vocabulary.
TokenId first_argmax(std::span<const float> scores) {
  constexpr size_t kLanes = 8;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + kLanes <= scores.size(); i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) lanes[l] = scores[i + l] > lanes[l] ? scores[i + l] : lanes[l];
  float best = *std::max_element(lanes, lanes + kLanes);
  for (; i < scores.size(); ++i) best = scores[i] > best ? scores[i] : best;
  const auto at = std::find(scores.begin(), scores.end(), best);
  return at == scores.end() ? 0 : static_cast<TokenId>(at - scores.begin());
}

}  // namespace

TokenId Sampler::next(std::span<const float> logits, std::span<const TokenId> history) {
  if (logits.empty()) throw Error("no logits to choose a token from", ErrorKind::InvalidArgument);
  const auto vocab = static_cast<TokenId>(logits.size());
  if (!options_.do_sample && options_.repetition_penalty == 1.0f) return first_argmax(logits);
  scores_.assign(logits.begin(), logits.end());

  // HF's RepetitionPenaltyLogitsProcessor: each id seen (once, however often) is made less likely.
  if (options_.repetition_penalty != 1.0f) {
    const float penalty = options_.repetition_penalty;
    for (TokenId id : history)  // from the unpenalized logits: a repeated id is penalized once
      if (id >= 0 && id < vocab) {
        float s = logits[static_cast<size_t>(id)];
        scores_[static_cast<size_t>(id)] = s < 0 ? s * penalty : s / penalty;
      }
  }

  if (!options_.do_sample) return first_argmax(scores_);

  // Shifted by the largest score before dividing: a temperature near 0 (1e-40) divided the raw
  // scores past float's range, inf - inf made every probability NaN, and the draw fell through to
  // the least likely token. Shifted, the best scores 0 and the rest tend to -inf: greedy's limit.
  // A score of +inf (a penalty near float's smallest divided one up) is the best, not NaN.
  const float best = scores_[static_cast<size_t>(first_argmax(scores_))];
  for (float& s : scores_) s = s == best ? 0.f : (s - best) / options_.temperature;
  order_.resize(scores_.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(),
                   [&](TokenId a, TokenId b) { return scores_[static_cast<size_t>(a)] > scores_[static_cast<size_t>(b)]; });
  size_t keep = order_.size();

  // Top-k keeps the k best and every id tied with the k-th (HF compares with the k-th score).
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < keep) {
    const float kth = scores_[static_cast<size_t>(order_[static_cast<size_t>(options_.top_k) - 1])];
    keep = static_cast<size_t>(options_.top_k);
    while (keep < order_.size() && scores_[static_cast<size_t>(order_[keep])] >= kth) ++keep;
  }

  // Softmax over what is kept, from the largest score for stability.
  const float top = scores_[static_cast<size_t>(order_[0])];
  probs_.assign(keep, 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += probs_[i] = std::exp(double(scores_[static_cast<size_t>(order_[i])]) - top);
  for (double& p : probs_) p /= total;

  // Top-p keeps an id while the mass of the ids ranked above it is below top_p (HF removes
  // those whose cumulative mass from the bottom is <= 1 - top_p), and always the best one.
  if (options_.top_p < 1.0f) {
    double above = 0;
    size_t kept = 0;
    while (kept < keep && (kept == 0 || above < options_.top_p)) above += probs_[kept++];
    keep = kept;
  }

  // Draw from the kept ids in proportion to their probabilities: 53 random bits in [0, 1).
  double mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += probs_[i];
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * mass;
  double cumulative = 0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += probs_[i];
    if (u < cumulative) return order_[i];
  }
  return order_[keep - 1];  // rounding left u at the very top
}

const char* finish_reason_name(FinishReason reason) { return reason == FinishReason::Stop ? "stop" : "length"; }

}  // namespace fusor
