// The generation loops: one sequence over a DecoderStep (the prompt in one step, then one token
// per step), and many over a DecoderBatch, each joining at its own step.
#include <algorithm>
#include <chrono>
#include <list>

#include "fusor/generate.h"
#include "generate/sequence_generation.h"

namespace fusor {

GenerateResult generate(DecoderStep& decoder, std::span<const TokenId> prompt, const GenerateOptions& options,
                        const Tokenizer* tokenizer, const TokenCallback& on_token) {
  const int64_t context = decoder.spec().context_length;
  SequenceGeneration seq(prompt, options, tokenizer, context);
  check_prompt_fits(static_cast<int64_t>(prompt.size()) + decoder.past_length(), context);
  if (seq.done()) return seq.result();
  std::span<const float> logits = decoder.run(prompt);
  while (!seq.accept(logits, decoder.past_length(), on_token)) {
    const TokenId id = seq.last();
    logits = decoder.run(std::span<const TokenId>(&id, 1));
  }
  return seq.result();
}

BatchGenerateResult generate_batch(DecoderBatch& batch, std::span<const BatchRequest> requests,
                                   const Tokenizer* tokenizer) {
  using Clock = SequenceGeneration::Clock;
  const int64_t context = batch.spec().context_length;
  struct Running {
    size_t request;
    SequenceGeneration gen;
    DecoderBatch::SequenceId sequence = -1;
    TokenId next = 0;
  };
  std::list<Running> waiting, running;  // list: SequenceGeneration stays put as others finish
  for (size_t i = 0; i < requests.size(); ++i) {
    check_prompt_fits(static_cast<int64_t>(requests[i].prompt.size()), context);
    waiting.push_back({i, SequenceGeneration(requests[i].prompt, requests[i].options, tokenizer, context)});
  }
  BatchGenerateResult out;
  out.results.resize(requests.size());
  std::vector<DecoderBatch::Feed> feeds;
  std::vector<Running*> fed;
  const auto begin = Clock::now();
  for (int64_t step = 0; !waiting.empty() || !running.empty(); ++step) {
    const auto now = Clock::now();
    feeds.clear();
    fed.clear();
    for (Running& r : running) {
      feeds.push_back({r.sequence, std::span<const TokenId>(&r.next, 1)});
      fed.push_back(&r);
    }
    for (auto it = waiting.begin(); it != waiting.end();) {
      const BatchRequest& req = requests[it->request];
      if (it->gen.done()) {  // max_new_tokens 0
        out.results[it->request] = it->gen.result();
        it = waiting.erase(it);
        continue;
      }
      // Joins at its start step, or at once when nothing runs (no step is spent idle).
      if (req.start_step > step && !running.empty()) {
        ++it;
        continue;
      }
      it->sequence = batch.add();
      it->gen.started(now);
      running.splice(running.end(), waiting, it++);
      feeds.push_back({running.back().sequence, req.prompt});
      fed.push_back(&running.back());
      out.prompt_tokens += static_cast<int64_t>(req.prompt.size());
    }
    if (feeds.empty()) continue;
    const auto results = batch.step(feeds);
    ++out.steps;
    for (size_t i = 0; i < fed.size(); ++i) {
      Running& r = *fed[i];
      const bool done = r.gen.accept(results[i], batch.length(r.sequence), {});
      ++out.generated_tokens;
      if (done) {
        batch.remove(r.sequence);
        out.results[r.request] = r.gen.result();
        running.remove_if([&](const Running& x) { return &x == &r; });
      } else {
        r.next = r.gen.last();
      }
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return out;
}

}  // namespace fusor
