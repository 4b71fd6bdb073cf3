#include "serve/connection_threads.h"

#include <system_error>
#include <utility>

namespace fusor::serve {

ConnectionThreads::ConnectionThreads(size_t max_threads, std::function<void()> after_each)
    : max_threads_(max_threads < 1 ? 1 : max_threads), after_each_(std::move(after_each)) {}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::enqueue(std::function<void()> connection) {
  std::unique_lock lock(mutex_);
  if (stopping_) {  // no thread will take it: httplib enqueues nothing after shutdown, but in case
    lock.unlock();
    connection();
    if (after_each_) after_each_();
    return;
  }
  connections_.push_back(std::move(connection));
  if (idle_ < connections_.size() && threads_.size() < max_threads_) {
    try {
      threads_.emplace_back([this] { serve_connections(); });
    } catch (const std::system_error&) {
      // Out of threads (ulimit -u, memory): the connection waits for one of the running ones.
      if (threads_.empty()) throw;
    }
  }
  queued_.notify_one();
}

void ConnectionThreads::serve_connections() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    queued_.wait(lock, [this] { return stopping_ || !connections_.empty(); });
    --idle_;
    if (connections_.empty()) return;  // stopping, and nothing left to serve
    std::function<void()> connection = std::move(connections_.front());
    connections_.pop_front();
    lock.unlock();
    connection();
    if (after_each_) after_each_();
    lock.lock();
  }
}

void ConnectionThreads::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;  // from here on no thread is added, so threads_ may be read unlocked
  }
  queued_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

size_t ConnectionThreads::threads() const {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

size_t ConnectionThreads::idle_threads() const {
  std::lock_guard lock(mutex_);
  return idle_;
}

}  // namespace fusor::serve
