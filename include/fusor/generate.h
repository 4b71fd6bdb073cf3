// Text generation over a DecoderStep (fusor/decoder.h): prefill the prompt in one step, then one
// token per step, choosing each by greedy argmax or by sampling, until a length, EOS or a stop
// string ends it; or over a DecoderBatch, many sequences together (generate_batch).
//
// Sampling follows Hugging Face transformers' semantics and order (repetition penalty, then
// temperature, top-k, top-p, then a draw). It is reproducible per seed in fusor (same seed,
// same model, same tokens), but not bit-identical to transformers, whose random stream differs.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fusor/decoder.h"
#include "fusor/tokenizer.h"

namespace fusor {

struct SamplingOptions {
  bool do_sample = false;          // false: greedy (argmax, the lowest id on an exact tie)
  float temperature = 1.0f;        // > 0; logits are divided by it
  int64_t top_k = 0;               // keep the k most likely (and ties with the k-th); 0: all
  float top_p = 1.0f;              // keep the most likely whose mass reaches top_p; 1: all
  float repetition_penalty = 1.0f; // > 0; applied to every id already in the sequence, greedy too
  uint64_t seed = 0;
  // InvalidArgument naming the option when a value is out of range (NaN included).
  void validate() const;
};

// Picks the next token from one position's logits. Owns the random stream, so one Sampler per
// sequence; the same options and seed give the same choices.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // `history` is every id so far (prompt and generated): the repetition penalty's set.
  TokenId next(std::span<const float> logits, std::span<const TokenId> history);

 private:
  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> scores_;            // reused per step
  std::vector<TokenId> order_;           // reused per step
  std::vector<double> probs_;            // reused per step
};

// The sampling knobs a caller set (a flag, a keyword, a request field); unset ones take the
// model's defaults.
struct SamplingKnobs {
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k;
};
// Sampling options from `knobs` over a model's generation_config.json `defaults`, knob by knob.
// A temperature of 0 is greedy whatever else is set; otherwise sampling is on when the caller
// sets a temperature, top_k or top_p, or else when the defaults' do_sample is true (transformers'
// rule: greedy unless the config says to sample). The repetition penalty applies either way.
// Not validated: the caller checks the result (SamplingOptions::validate or its protocol's rules).
SamplingOptions sampling_with_defaults(const SamplingKnobs& knobs, const GenerationDefaults& defaults, uint64_t seed);

enum class FinishReason { Length, Stop };
const char* finish_reason_name(FinishReason reason);  // "length", "stop"

struct GenerateOptions {
  int64_t max_new_tokens = 16;      // >= 0
  SamplingOptions sampling;
  std::vector<TokenId> eos_ids;     // a generated one ends with "stop" (and is kept in output_ids)
  bool ignore_eos = false;          // generate max_new_tokens whatever comes (eos_ids only)
  // A generated one ends with "stop" even with ignore_eos (vLLM's stop_token_ids); kept in
  // output_ids, and in the text unless it is a special token.
  std::vector<TokenId> stop_ids;
  // Ends with "stop" as soon as the text holds one; the text is cut before it (output_ids keep
  // the token that completed it). Needs a tokenizer.
  std::vector<std::string> stop;
  bool skip_special_tokens = true;  // in the text (EOS, BOS and other special tokens dropped)
};

struct GenerateResult {
  std::vector<TokenId> output_ids;  // the new tokens only
  std::string text;                 // their text ("" without a tokenizer)
  FinishReason finish_reason = FinishReason::Length;
  double ttft_ms = 0;               // from the call to the first new token (prefill + choice)
  double tokens_per_s = 0;          // tokens after the first / time after the first; 0 if <= 1
};

// Called once per new token with the text it completed: streaming-safe UTF-8 (an unfinished
// character waits for its last byte), with text that might begin a stop string held back until
// it does not. The pieces joined equal GenerateResult::text.
using TokenCallback = std::function<void(TokenId id, std::string_view text)>;

// New tokens that fit after `prompt_tokens` in a context of `context_length`: the prompt and the
// generated tokens together never exceed it (vLLM's rule), so a prompt that fills the context
// leaves 0. Unbounded (INT64_MAX) when the context length is unknown (0). Every path that
// admits a prompt or stops a sequence at the context asks this.
int64_t context_room(int64_t prompt_tokens, int64_t context_length);
// InvalidArgument naming both numbers when context_room() is 0.
void check_prompt_fits(int64_t prompt_tokens, int64_t context_length);

// Generates after `prompt` (not empty) from the decoder's current state, which should be empty
// (reset()). Stops at max_new_tokens, at EOS, at a stop string, or when the context is full
// (finish "length"). `tokenizer` may be null when there are no stop strings and no text wanted.
// A prompt that leaves no room in the context (check_prompt_fits) is an InvalidArgument error
// before any step runs.
GenerateResult generate(DecoderStep& decoder, std::span<const TokenId> prompt, const GenerateOptions& options,
                        const Tokenizer* tokenizer = nullptr, const TokenCallback& on_token = {});

// One sequence of a batch: its prompt, options, and the step at which it joins (sequences that
// join while others decode are prefilled in the same step as the others' next tokens).
struct BatchRequest {
  std::vector<TokenId> prompt;
  GenerateOptions options;
  int64_t start_step = 0;
};

struct BatchGenerateResult {
  std::vector<GenerateResult> results;  // per request, in order (ttft from its own first step)
  int64_t steps = 0;                    // DecoderBatch steps run
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double seconds = 0;                   // the whole loop
};

// Generates for every request together over `batch`, continuous-batching style: each step runs
// the next token of every running sequence plus the prompts of those joining; a sequence leaves
// (and frees its cache blocks) as soon as it finishes. A request joins at its start_step, or
// earlier when nothing else runs. Errors as generate(), before any step for bad prompts.
BatchGenerateResult generate_batch(DecoderBatch& batch, std::span<const BatchRequest> requests,
                                   const Tokenizer* tokenizer = nullptr);

}  // namespace fusor
