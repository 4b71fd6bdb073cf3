#include "serve/grpc_stream.h"

#include <utility>

namespace fusor::serve {

uint64_t StreamResponses::begin(GenerativeModel* generation) {
  std::lock_guard lock(mutex_);
  const uint64_t n = next_request_++;
  open_[n].generation = generation;
  if (generation) generation->stream_opened();
  return n;
}

void StreamResponses::started(uint64_t request, uint64_t generation_id) {
  std::lock_guard lock(mutex_);
  if (auto it = open_.find(request); it != open_.end()) it->second.generation_id = generation_id;
}

void StreamResponses::push(uint64_t request, std::optional<inference::ModelStreamInferResponse> r, bool last) {
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    queue_.push_back({request, std::move(r), last});
  }
  queued_.notify_one();
}

std::optional<inference::ModelStreamInferResponse> StreamResponses::next(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!queued_.wait_for(lock, wait, [this] { return !queue_.empty(); })) return std::nullopt;
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    if (q.response) {
      writing_ = std::move(q);
      return std::move(*writing_->response);
    }
    finish(q.request);  // in the queue's order: after the responses before it were written
  }
}

void StreamResponses::written() {
  std::lock_guard lock(mutex_);
  if (writing_ && writing_->last) finish(writing_->request);
  writing_.reset();
}

bool StreamResponses::idle() const {
  std::lock_guard lock(mutex_);
  return open_.empty() && queue_.empty();
}

void StreamResponses::finish(uint64_t request) {
  auto it = open_.find(request);
  if (it == open_.end()) return;
  if (it->second.generation) it->second.generation->stream_closed();
  open_.erase(it);
}

void StreamResponses::end() {
  std::lock_guard lock(mutex_);
  ended_ = true;
  for (auto& [n, r] : open_) {
    if (r.generation && r.generation_id) r.generation->cancel(*r.generation_id);
    if (r.generation) r.generation->stream_closed();
  }
  open_.clear();
  queue_.clear();
}

}  // namespace fusor::serve
