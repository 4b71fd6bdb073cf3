// The gate's kv_cache item (fusor/check.h): sequences joining a DecoderBatch at different steps
// against each run alone through the plain loop with fusion off, in fast kernels (tier 1) and
// with both sides in reference kernels (tier 3).
#include <algorithm>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "check/compare.h"
#include "fusor/check.h"
#include "fusor/decoder.h"
#include "passes/cache_attention.h"

namespace fusor {
namespace {

constexpr int kDecodeSteps = 6;
// Prompts of 1 and 17 tokens (17 crosses a 16-position block) and a longer one (at most the
// context - 8), joining the batch at steps 0, 2 and 3.
struct Joiner {
  int64_t prompt;
  int join;
};
constexpr Joiner kSequences[] = {{1, 0}, {17, 2}, {40, 3}};

// One checked sequence: its tokens (prompt, then one per decode step), fixed before either side
// runs so both see the same inputs, and the batch step its prompt joins at.
struct Script {
  std::vector<TokenId> prompt, decoded;
  int join = 0;
  int steps() const { return 1 + static_cast<int>(decoded.size()); }  // the prompt's step, then one per token
  std::span<const TokenId> feed(int step) const {
    return step == 0 ? std::span<const TokenId>(prompt) : std::span<const TokenId>(&decoded[static_cast<size_t>(step - 1)], 1);
  }
};

// Deterministic ids spread over the vocabulary (a multiplicative step, no argmax involved).
std::vector<TokenId> ids(int64_t count, int64_t vocab, int64_t salt) {
  std::vector<TokenId> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(static_cast<TokenId>((salt * 131 + i * 7919 + 13) % vocab));
  return out;
}

// kSequences, each fitting the context with its decode steps.
std::vector<Script> scripts(const DecoderSpec& spec, int64_t vocab) {
  const int64_t context = spec.context_length;
  std::vector<Script> out;
  for (size_t i = 0; i < std::size(kSequences); ++i) {
    const bool last = i + 1 == std::size(kSequences);
    int64_t prompt = kSequences[i].prompt, steps = kDecodeSteps;
    if (last && context > 0) prompt = std::max<int64_t>(1, std::min(prompt, context - 8));
    if (context > 0) {
      prompt = std::max<int64_t>(1, std::min(prompt, context - kDecodeSteps));
      steps = std::clamp<int64_t>(context - prompt, 0, kDecodeSteps);
    }
    const auto salt = static_cast<int64_t>(i);
    out.push_back({ids(prompt, vocab, salt), ids(steps, vocab, salt + 7), kSequences[i].join});
  }
  return out;
}

Tensor logits_tensor(std::span<const float> logits) {
  Tensor t(DType::Float32, {static_cast<int64_t>(logits.size())});
  std::copy(logits.begin(), logits.end(), t.data<float>());
  return t;
}

// Per sequence, per step: the last token's logits.
using Logits = std::vector<std::vector<Tensor>>;

Logits run_alone(const Engine& engine, const DecoderSpec& spec, const std::vector<Script>& scripts, bool reference) {
  SessionOptions unfused;
  unfused.fusion = std::nullopt;  // the plain loop: the unfused plan
  unfused.reference = reference;
  DecoderStep step(engine, spec, unfused, 1);  // every (tokens, past) shape is new: keep none around
  Logits out;
  for (const Script& s : scripts) {
    step.reset();
    out.emplace_back();
    for (int k = 0; k < s.steps(); ++k) out.back().push_back(logits_tensor(step.run(s.feed(k))));
  }
  return out;
}

// Every script through one DecoderBatch: at each batch step, every sequence that has joined and
// has tokens left is fed together.
Logits run_cached(DecoderBatch& batch, const std::vector<Script>& scripts, const KvCacheCheckOptions& options) {
  std::vector<DecoderBatch::SequenceId> ids;
  Logits out(scripts.size());
  int last = 0;
  for (const Script& s : scripts) {
    ids.push_back(batch.add());
    last = std::max(last, s.join + s.steps());
  }
  for (int t = 0; t < last; ++t) {
    std::vector<DecoderBatch::Feed> feeds;
    std::vector<size_t> fed;
    for (size_t i = 0; i < scripts.size(); ++i) {
      const int k = t - scripts[i].join;
      if (k < 0 || k >= scripts[i].steps()) continue;
      feeds.push_back({ids[i], scripts[i].feed(k)});
      fed.push_back(i);
    }
    auto logits = batch.step(feeds);
    for (size_t f = 0; f < fed.size(); ++f) {
      Tensor got = logits_tensor(logits[f]);
      if (options.corrupt_cached)
        options.corrupt_cached(static_cast<int>(fed[f]), static_cast<int>(out[fed[f]].size()),
                               std::span<float>(got.data<float>(), static_cast<size_t>(got.numel())));
      out[fed[f]].push_back(std::move(got));
    }
  }
  return out;
}

// Keeps the worse of two differences (by whether they pass, then by the largest |a - b|).
void keep_worst(Difference& worst, const Difference& d, std::string* where, const std::string& label, bool first) {
  const bool worse = first || (worst.within && !d.within) || (worst.within == d.within && d.max_abs > worst.max_abs);
  if (!worse) return;
  worst = d;
  if (where) *where = label;
}

}  // namespace

KvCacheVerdict check_kv_cache(const Engine& engine, const std::string& model_file, const KvCacheCheckOptions& options) {
  KvCacheVerdict v;
  if (model_file.empty()) {
    v.reason = "the model file is not known (the decoder's configs beside it are needed)";
    return v;
  }
  DecoderSpec spec;
  try {
    spec = DecoderSpec::describe(engine, model_file);
  } catch (const Error& e) {
    v.reason = e.what();
    return v;
  }
  v.applicable = true;
  const auto& disabled = options.fusion.disabled;
  if (std::find(disabled.begin(), disabled.end(), kCacheAttentionItem) != disabled.end()) {
    v.reason = std::string("fusion.disabled lists ") + kCacheAttentionItem;
    return v;
  }
  SessionOptions fast, reference;
  fast.fusion = reference.fusion = options.fusion;
  reference.reference = true;
  // A pool just large enough for the scripts (the default, 8 x the context, is sized for serving).
  DecoderBatchOptions pool;
  for (const Joiner& s : kSequences)
    pool.cache_tokens += (s.prompt + kDecodeSteps + pool.block_size - 1) / pool.block_size * pool.block_size;
  std::optional<DecoderBatch> cached_fast;
  try {
    cached_fast.emplace(engine, spec, fast, pool);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::UnsupportedOp) throw;
    v.reason = e.what();
    return v;
  }
  v.cached = true;

  // The vocabulary, when the export does not declare it: the logits of one token.
  int64_t vocab = spec.vocab_size;
  if (vocab <= 0) {
    DecoderBatch probe(engine, spec, fast, pool);
    const DecoderBatch::SequenceId s = probe.add();
    const TokenId zero = 0;
    vocab = static_cast<int64_t>(probe.step(std::vector<DecoderBatch::Feed>{{s, std::span<const TokenId>(&zero, 1)}})[0].size());
  }
  const std::vector<Script> plan = scripts(spec, vocab);
  for (const Script& s : plan)
    v.sequences.push_back("prompt " + std::to_string(s.prompt.size()) + ", joins at step " + std::to_string(s.join) + ", " +
                          std::to_string(s.decoded.size()) + " decode steps");

  const Logits alone = run_alone(engine, spec, plan, false);
  const Logits cached = run_cached(*cached_fast, plan, options);
  cached_fast.reset();  // its pool: the reference side's needs the memory more
  const Logits alone_truth = run_alone(engine, spec, plan, true);
  DecoderBatch cached_reference(engine, spec, reference, pool);
  const Logits cached_truth = run_cached(cached_reference, plan, options);

  const Tolerance tol = twin_tolerance();
  v.passed = true;
  for (size_t i = 0; i < plan.size(); ++i)
    for (size_t k = 0; k < cached[i].size(); ++k) {
      const std::string label = "sequence " + std::to_string(i) + ", step " + std::to_string(k);
      const Difference d = compare_tensors(cached[i][k], alone[i][k], tol);
      const Difference t = compare_tensors(cached_truth[i][k], alone_truth[i][k], tol);
      keep_worst(v.vs_unfused, d, &v.worst, label, v.steps_compared == 0);
      keep_worst(v.vs_truth, t, nullptr, "", v.steps_compared == 0);
      v.passed = v.passed && d.within && t.within;
      ++v.steps_compared;
    }
  return v;
}

}  // namespace fusor
