// The plain generation loop: the prompt in one step, then one token per step.
#include <algorithm>
#include <chrono>
#include <optional>

#include "fusor/error.h"
#include "fusor/generate.h"
#include "generate/text_stream.h"

namespace fusor {

GenerateResult generate(DecoderStep& decoder, std::span<const TokenId> prompt, const GenerateOptions& options,
                        const Tokenizer* tokenizer, const TokenCallback& on_token) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (prompt.empty()) throw Error("the prompt has no tokens", ErrorKind::InvalidArgument);
  if (options.max_new_tokens < 0) throw Error("max new tokens must be 0 or more", ErrorKind::InvalidArgument);
  if (!options.stop.empty() && !tokenizer) throw Error("stop strings need a tokenizer", ErrorKind::InvalidArgument);
  const int64_t context = decoder.spec().context_length;
  const auto prompt_length = static_cast<int64_t>(prompt.size()) + decoder.past_length();
  if (context > 0 && prompt_length > context)
    throw Error("the prompt has " + std::to_string(prompt_length) + " tokens, more than the model's context length of " +
                    std::to_string(context),
                ErrorKind::InvalidArgument);
  Sampler sampler(options.sampling);
  std::optional<TextStream> text;
  if (tokenizer) text.emplace(*tokenizer, options.skip_special_tokens, options.stop);

  GenerateResult result;
  if (options.max_new_tokens == 0) return result;
  std::vector<TokenId> history(prompt.begin(), prompt.end());
  std::span<const float> logits = decoder.run(prompt);
  Clock::time_point first;
  for (;;) {
    const TokenId id = sampler.next(logits, history);
    const auto now = Clock::now();
    if (result.output_ids.empty()) {
      first = now;
      result.ttft_ms = std::chrono::duration<double, std::milli>(now - start).count();
    }
    result.output_ids.push_back(id);
    history.push_back(id);

    TextStream::Piece piece = text ? text->push(id) : TextStream::Piece{};
    bool done = true;
    if (piece.stopped) result.finish_reason = FinishReason::Stop;
    else if (!options.ignore_eos && std::find(options.eos_ids.begin(), options.eos_ids.end(), id) != options.eos_ids.end())
      result.finish_reason = FinishReason::Stop;
    else if (static_cast<int64_t>(result.output_ids.size()) >= options.max_new_tokens) result.finish_reason = FinishReason::Length;
    // The context holds the prompt and every new token, the last one too (never fed, but a
    // position it would take).
    else if (context > 0 && decoder.past_length() + 1 >= context) result.finish_reason = FinishReason::Length;
    else done = false;
    if (done && text && !piece.stopped) {  // the last token: flush what the stream held back
      TextStream::Piece rest = text->finish();
      piece.text += rest.text;
      if (rest.stopped) result.finish_reason = FinishReason::Stop;
    }
    if (on_token) on_token(id, piece.text);
    if (done) {
      const double decoding = std::chrono::duration<double>(now - first).count();
      if (result.output_ids.size() > 1 && decoding > 0)
        result.tokens_per_s = static_cast<double>(result.output_ids.size() - 1) / decoding;
      break;
    }
    logits = decoder.run(std::span<const TokenId>(&id, 1));
  }
  if (text) result.text = text->text();
  return result;
}

}  // namespace fusor
