#include "generate/sequence_generation.h"

#include <algorithm>

#include "fusor/error.h"

namespace fusor {

SequenceGeneration::SequenceGeneration(std::span<const TokenId> prompt, const GenerateOptions& options,
                                       const Tokenizer* tokenizer, int64_t context_length)
    : options_(options), context_(context_length), sampler_(options.sampling), history_(prompt.begin(), prompt.end()) {
  if (prompt.empty()) throw Error("the prompt has no tokens", ErrorKind::InvalidArgument);
  if (options.max_new_tokens < 0) throw Error("max new tokens must be 0 or more", ErrorKind::InvalidArgument);
  if (!options.stop.empty() && !tokenizer) throw Error("stop strings need a tokenizer", ErrorKind::InvalidArgument);
  if (tokenizer) text_.emplace(*tokenizer, options.skip_special_tokens, options.stop);
  done_ = options.max_new_tokens == 0;
  // No more room than the context leaves: max_new_tokens may be "as many as fit" (2^62 threw
  // vector::reserve's length_error).
  const int64_t room = context_length > 0 ? context_room(static_cast<int64_t>(prompt.size()), context_length) : 4096;
  const auto expected = static_cast<size_t>(std::clamp<int64_t>(options.max_new_tokens, 0, std::max<int64_t>(room, 0)));
  history_.reserve(prompt.size() + expected);
  result_.output_ids.reserve(expected);
}

bool SequenceGeneration::accept(std::span<const float> logits, int64_t held, const TokenCallback& on_token) {
  const TokenId id = sampler_.next(logits, history_);
  const auto now = Clock::now();
  if (result_.output_ids.empty()) {
    first_ = now;
    result_.ttft_ms = std::chrono::duration<double, std::milli>(now - start_).count();
  }
  result_.output_ids.push_back(id);
  history_.push_back(id);

  TextStream::Piece piece = text_ ? text_->push(id) : TextStream::Piece{};
  done_ = true;
  if (piece.stopped) result_.finish_reason = FinishReason::Stop;
  else if (std::find(options_.stop_ids.begin(), options_.stop_ids.end(), id) != options_.stop_ids.end())
    result_.finish_reason = FinishReason::Stop;
  else if (!options_.ignore_eos && std::find(options_.eos_ids.begin(), options_.eos_ids.end(), id) != options_.eos_ids.end())
    result_.finish_reason = FinishReason::Stop;
  else if (static_cast<int64_t>(result_.output_ids.size()) >= options_.max_new_tokens) result_.finish_reason = FinishReason::Length;
  // The context holds the prompt and every new token, this one too (never fed, but a position
  // it would take): `held` and it leave no room for another.
  else if (context_room(held + 1, context_) == 0) result_.finish_reason = FinishReason::Length;
  else done_ = false;
  if (done_ && text_ && !piece.stopped) {  // the last token: flush what the stream held back
    TextStream::Piece rest = text_->finish();
    piece.text += rest.text;
    if (rest.stopped) result_.finish_reason = FinishReason::Stop;
  }
  if (on_token) on_token(id, piece.text);
  if (done_) {
    const double decoding = std::chrono::duration<double>(now - first_).count();
    if (result_.output_ids.size() > 1 && decoding > 0)
      result_.tokens_per_s = static_cast<double>(result_.output_ids.size() - 1) / decoding;
  }
  return done_;
}

GenerateResult SequenceGeneration::result() {
  if (text_) result_.text = text_->text();
  return result_;
}

}  // namespace fusor
