// The bridge between a generation's events, which come on the scheduler's thread and must not
// block, and the HTTP thread that answers the request, which waits for them: a small
// thread-safe queue of text pieces and the final outcome.
//
//   auto stream = GenerationStream::create();
//   uint64_t id = model.submit(request, stream->events());
//   while (auto next = stream->next(std::chrono::milliseconds(100))) { ... write next->pieces ... }
//
// The events hold the stream by shared_ptr, so it lives until both sides are done with it
// (a cancelled request still reports on_done after its HTTP handler has returned). The streams of
// one model share its StreamHub (serve/stream_hub.h), so one wake-up per step serves them all.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/generative_model.h"
#include "serve/stream_hub.h"

namespace fusor::serve {

class GenerationStream : public std::enable_shared_from_this<GenerationStream> {
 public:
  // `hub`: the model's (GenerativeModel::stream_hub()); none: a hub of its own.
  static std::shared_ptr<GenerationStream> create(std::shared_ptr<StreamHub> hub = nullptr);

  // Callbacks that queue into this stream; quick, never blocking beyond a short lock.
  GenerationEvents events();

  // What has come since the last call: each token's text piece in order (empty pieces kept,
  // one per token), and the outcome once on_done has run.
  struct Update {
    std::vector<std::string> pieces;
    std::optional<GenerationOutcome> done;
  };
  // Waits up to `timeout` for news; nullopt when none came (the caller may check that its client
  // is still there, and call again). Once the outcome has come, every call returns it at once.
  std::optional<Update> next(std::chrono::milliseconds timeout);
  // Waits for on_done; the pieces are dropped (the outcome holds the whole text).
  GenerationOutcome wait_done();
  bool finished() const;

 private:
  explicit GenerationStream(std::shared_ptr<StreamHub> hub) : hub_(std::move(hub)) {}
  void changed(std::unique_lock<std::mutex>& lock);  // after an event's change

  std::shared_ptr<StreamHub> hub_;  // its mutex guards the fields below
  std::vector<std::string> pieces_;
  std::optional<GenerationOutcome> done_;
};

}  // namespace fusor::serve
