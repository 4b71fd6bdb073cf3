// A decoder being served (issue #17): its spec, tokenizer and chat template, and the
// iteration-level scheduler (serve/generation_scheduler.h) that runs every accepted request's
// tokens over one DecoderBatch. The protocols (OpenAI-compatible /v1, Triton's generate) turn their
// bodies into GenerationRequests and stream the events back.
//
//   uint64_t id = model.submit({prompt, options, "interactive"},
//                              {.on_token = [](TokenId, std::string_view text, bool last) { ... },
//                               .on_done = [](const GenerationOutcome& o) { ... }});
//   model.cancel(id);  // a client went away: its blocks return to the pool at the next step
//
// Callbacks run on the scheduler's thread (or inside submit() when the request is rejected at
// once): they must be quick, must not block, and must not call back into the model.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fusor/chat_template.h"
#include "fusor/config.h"
#include "fusor/decoder.h"
#include "fusor/engine.h"
#include "fusor/generate.h"
#include "fusor/tokenizer.h"
#include "serve/status.h"

namespace fusor::serve {

struct GenerationRequest {
  std::vector<TokenId> prompt;  // not empty; at most the context length
  // max_new_tokens, sampling, stop strings. eos_ids empty and !ignore_eos: the model's EOS ids.
  GenerateOptions options;
  std::string cls;  // traffic class; "" = serve.default_class
};

struct GenerationOutcome {
  // Not ok when the request never ran or failed: an unknown class, a bad prompt (400), a full
  // queue, a queue timeout or a draining server (503), a model error (500).
  Status status;
  GenerateResult result;  // output_ids, text, ttft_ms
  // "stop", "length", or "abort" (cancelled); empty when !status.ok().
  std::string finish_reason;
  int64_t prompt_tokens = 0;
};

struct GenerationEvents {
  // Each new token and the text it completed (whole UTF-8 characters; text that might begin a
  // stop string is held back), in order. The pieces joined equal the outcome's result.text.
  // `last`: this token ends the generation (on_done follows), as Triton's streams mark the
  // response that carries it final.
  std::function<void(TokenId id, std::string_view text, bool last)> on_token;
  // Exactly once, last.
  std::function<void(const GenerationOutcome&)> on_done;
};

class GenerationScheduler;
class StreamHub;
class GenerationStats;

class GenerativeModel {
 public:
  // `model_file` is the .onnx the engine was loaded from (its folder holds the configs and the
  // tokenizer). Throws fusor::Error when the engine is not a decoder export. `announce`: say on
  // stderr what was built (fusor serve does; the tuner, building one per setting, does not).
  GenerativeModel(std::string name, Engine engine, const std::string& model_file, const ServeConfig& config,
                  const SessionOptions& options, int threads, bool announce = true);
  ~GenerativeModel();  // drains

  const std::string& name() const { return name_; }
  const DecoderSpec& spec() const { return spec_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }  // null without tokenizer.json
  const ChatTemplate& chat_template() const { return *chat_; }
  const ServeConfig& config() const { return config_; }
  int64_t created_unix() const { return created_; }  // load time, for /v1/models

  // What the requests' GenerationStreams should wait on (serve/stream_hub.h).
  std::shared_ptr<StreamHub> stream_hub() const;
  // Queues a request; returns its id. A rejected request's on_done runs before submit returns.
  uint64_t submit(GenerationRequest request, GenerationEvents events);
  // Ends a request early: it leaves at the next step boundary, its blocks return to the pool,
  // and on_done reports finish "abort". Unknown or finished ids are ignored.
  void cancel(uint64_t id);
  // Stops accepting (503) and returns once every accepted request has finished.
  void drain();
  // Counts a request a protocol refused before submit() (a bad body, a prompt over the
  // context), so that /metrics accounts for every request; `cls` may be anything the body
  // said (an unknown class counts under the default one).
  void refused(const std::string& cls, Code code);

  // Streams (HTTP threads writing this model's events) open now. A graceful shutdown drains the
  // scheduler, then waits for these to write their last events before it stops the listener,
  // which would cut them.
  void stream_opened();
  void stream_closed();
  // Returns once no stream is open, or after `limit` (a client that stopped reading).
  void wait_streams_closed(std::chrono::milliseconds limit);

  GenerationStats& stats() { return *stats_; }
  // Running and waiting sequences, and the KV cache, now.
  struct Load {
    int64_t running = 0, waiting = 0;
    KvCacheStats cache;
  };
  Load load() const;

 private:
  std::string name_;
  ServeConfig config_;
  DecoderSpec spec_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_;
  int64_t created_ = 0;
  std::unique_ptr<GenerationStats> stats_;
  std::unique_ptr<GenerationScheduler> scheduler_;
  std::mutex streams_mu_;
  std::condition_variable streams_cv_;
  int64_t open_streams_ = 0;
};

}  // namespace fusor::serve
