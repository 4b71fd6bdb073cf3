// One execution context's sessions, one per concrete set of input dims (a batch bucket and a
// padded sequence length), created on first use and kept: plans are built per shape, and
// building one costs far more than running it. Not thread-safe: one cache per context thread.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "fusor/engine.h"

namespace fusor::serve {

class SessionCache {
 public:
  SessionCache(const Engine& engine, SessionOptions options) : engine_(engine), options_(std::move(options)) {}
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  size_t size() const { return sessions_.size(); }

 private:
  const Engine& engine_;
  SessionOptions options_;
  std::map<std::map<std::string, Dims>, Session> sessions_;
};

}  // namespace fusor::serve
