#include "serve/generation_stream.h"

namespace fusor::serve {

std::shared_ptr<GenerationStream> GenerationStream::create(std::shared_ptr<StreamHub> hub) {
  if (!hub) hub = std::make_shared<StreamHub>();
  return std::shared_ptr<GenerationStream>(new GenerationStream(std::move(hub)));
}

void GenerationStream::changed(std::unique_lock<std::mutex>& lock) {
  if (!hub_->changed_locked()) return;  // the open step's end wakes the waiters
  lock.unlock();
  hub_->changed().notify_all();
}

GenerationEvents GenerationStream::events() {
  std::shared_ptr<GenerationStream> self = shared_from_this();
  GenerationEvents e;
  e.on_token = [self](TokenId, std::string_view text, bool) {
    std::unique_lock lock(self->hub_->mutex());
    self->pieces_.emplace_back(text);
    self->changed(lock);
  };
  e.on_done = [self](const GenerationOutcome& outcome) {
    std::unique_lock lock(self->hub_->mutex());
    self->done_ = outcome;
    self->changed(lock);
  };
  return e;
}

std::optional<GenerationStream::Update> GenerationStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(hub_->mutex());
  if (!hub_->changed().wait_for(lock, timeout, [this] { return !pieces_.empty() || done_.has_value(); })) return std::nullopt;
  Update u;
  u.pieces.swap(pieces_);
  u.done = done_;
  return u;
}

GenerationOutcome GenerationStream::wait_done() {
  std::unique_lock lock(hub_->mutex());
  hub_->changed().wait(lock, [this] { return done_.has_value(); });
  pieces_.clear();
  return *done_;
}

bool GenerationStream::finished() const {
  std::lock_guard lock(hub_->mutex());
  return done_.has_value();
}

}  // namespace fusor::serve
