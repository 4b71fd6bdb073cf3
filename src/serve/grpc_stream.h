// The responses of one ModelStreamInfer call (Triton's streaming extension). Requests come on
// the call's reading thread and are answered later, from any thread: a batcher's completion, or
// the generation scheduler's token events, which must not block. Only the call's own thread may
// write to the stream, so answers queue here and it writes them in the order they came.
//
// A generation counts as an open stream of its model (GenerativeModel::stream_opened) until its
// last response is written or the call ends, so that a graceful shutdown lets it finish.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "kserve.pb.h"
#include "serve/generative_model.h"

namespace fusor::serve {

class StreamResponses {
 public:
  // A request begins; returns its number here. It ends with exactly one push(.., last = true).
  // `generation`: the decoder it runs on.
  uint64_t begin(GenerativeModel* generation = nullptr);
  // The generation's id, for a cancel if the call ends first.
  void started(uint64_t request, uint64_t generation_id);
  // No response `r`: the request ends without one (`last` must be true).
  void push(uint64_t request, std::optional<inference::ModelStreamInferResponse> r, bool last);
  // Ends a request without a response (Triton drops an empty final one the client did not ask for).
  void end_silently(uint64_t request) { push(request, std::nullopt, true); }

  // Waits up to `wait` for the next response to write; written() must follow each one.
  std::optional<inference::ModelStreamInferResponse> next(std::chrono::milliseconds wait);
  void written();
  // No request in flight and nothing left to write.
  bool idle() const;
  // The call ends: generations still running are cancelled and their streams closed; later
  // pushes are dropped.
  void end();
  // The call has ended (any thread; requests still queued in a batcher are then dropped).
  bool ended() const { return ended_.load(); }

 private:
  struct Request {
    GenerativeModel* generation = nullptr;
    std::optional<uint64_t> generation_id;
  };
  struct Queued {
    uint64_t request;
    std::optional<inference::ModelStreamInferResponse> response;  // none: the request just ends
    bool last;
  };
  void finish(uint64_t request);  // under the lock

  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<Queued> queue_;
  std::optional<Queued> writing_;
  std::map<uint64_t, Request> open_;  // begun, last response not yet written
  uint64_t next_request_ = 0;
  std::atomic<bool> ended_{false};  // also read without the mutex, by ended()
};

}  // namespace fusor::serve
