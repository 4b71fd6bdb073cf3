#include "serve/generation_stream.h"

namespace fusor::serve {

std::shared_ptr<GenerationStream> GenerationStream::create() {
  return std::shared_ptr<GenerationStream>(new GenerationStream());
}

GenerationEvents GenerationStream::events() {
  std::shared_ptr<GenerationStream> self = shared_from_this();
  GenerationEvents e;
  e.on_token = [self](TokenId, std::string_view text) {
    {
      std::lock_guard lock(self->mutex_);
      self->pieces_.emplace_back(text);
    }
    self->changed_.notify_all();
  };
  e.on_done = [self](const GenerationOutcome& outcome) {
    {
      std::lock_guard lock(self->mutex_);
      self->done_ = outcome;
    }
    self->changed_.notify_all();
  };
  return e;
}

std::optional<GenerationStream::Update> GenerationStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [this] { return !pieces_.empty() || done_.has_value(); })) return std::nullopt;
  Update u;
  u.pieces.swap(pieces_);
  u.done = done_;
  return u;
}

GenerationOutcome GenerationStream::wait_done() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return done_.has_value(); });
  pieces_.clear();
  return *done_;
}

bool GenerationStream::finished() const {
  std::lock_guard lock(mutex_);
  return done_.has_value();
}

std::optional<GenerationOutcome> GenerationStream::outcome() const {
  std::lock_guard lock(mutex_);
  return done_;
}

}  // namespace fusor::serve
