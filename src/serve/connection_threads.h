// The HTTP server's threads: one per open connection, started as connections come and kept for
// the next ones, up to a cap.
//
// cpp-httplib serves a connection on one thread until it closes, and an idle keep-alive
// connection holds its thread for the keep-alive timeout. With its fixed pool, 128 idle clients
// stalled every new connection for up to 30 s. A blocked thread costs a stack and no CPU, so the
// pool grows to `max_threads` instead; past it, connections wait for a thread as before.
#pragma once
#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fusor::serve {

class ConnectionThreads : public httplib::TaskQueue {
 public:
  // `after_each` runs on the connection's thread once it has been served.
  ConnectionThreads(size_t max_threads, std::function<void()> after_each);
  ~ConnectionThreads() override;

  void enqueue(std::function<void()> connection) override;
  // Serves the connections already queued, then joins every thread.
  void shutdown() override;

  size_t threads() const;
  size_t idle_threads() const;

 private:
  void serve_connections();

  const size_t max_threads_;
  const std::function<void()> after_each_;
  mutable std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::function<void()>> connections_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace fusor::serve
