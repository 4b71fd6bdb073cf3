// One sequence's side of generation, whatever runs the steps: its sampler, history, streamed
// text and stop rules. generate() drives one through a DecoderStep, generate_batch() many
// through a DecoderBatch; both feed it each step's logits and ask what to feed next.
#pragma once
#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "fusor/generate.h"
#include "generate/text_stream.h"

namespace fusor {

class SequenceGeneration {
 public:
  using Clock = std::chrono::steady_clock;
  // Checks the prompt against the options and the context (InvalidArgument before any step).
  SequenceGeneration(std::span<const TokenId> prompt, const GenerateOptions& options, const Tokenizer* tokenizer,
                     int64_t context_length);

  // Marks when this sequence's first step starts (its time to first token counts from here).
  void started(Clock::time_point at) { start_ = at; }
  // Chooses the next token from `logits`, with `held` tokens (prompt and generated) in the
  // decoder's past. Returns true when the sequence is finished.
  bool accept(std::span<const float> logits, int64_t held, const TokenCallback& on_token);
  // The token to feed next (the last one chosen).
  TokenId last() const { return result_.output_ids.back(); }
  bool done() const { return done_; }
  // The tokens chosen so far.
  const std::vector<TokenId>& output_ids() const { return result_.output_ids; }
  // The result, once done (or empty when max_new_tokens is 0).
  GenerateResult result();

 private:
  GenerateOptions options_;
  int64_t context_;
  Sampler sampler_;
  std::optional<TextStream> text_;
  std::vector<TokenId> history_;
  GenerateResult result_;
  Clock::time_point start_ = Clock::now(), first_;
  bool done_ = false;
};

}  // namespace fusor
