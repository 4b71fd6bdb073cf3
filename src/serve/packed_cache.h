// One execution context's packed sessions (fusor/packed.h), one per token capacity: a batch of
// requests holding T real tokens runs in the session whose capacity is T rounded up to a step,
// built on first use and kept. The step is serve.token_bucket, doubled while it is under T/16,
// so filler stays under 1/8 of a batch and the plans are few (8 per doubling of T) whatever the
// mix of lengths. The sessions run one at a time, so they share one arena, the largest's
// (runtime/shared_arena.h). Not thread-safe: one cache per context thread.
//
// The server builds every capacity up to its token budget before it reports ready
// (ServedModel, serve.prebuild_plans).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fusor/packed.h"
#include "runtime/shared_arena.h"
#include "serve/session_cache.h"
#include "serve/signature.h"

namespace fusor::serve {

class PackedCache {
 public:
  using OnBuild = std::function<void(int64_t tokens, const Session& session)>;
  // Each plan's options come from `options` by its token capacity (serve.matrix's max_tokens rows).
  PackedCache(const Engine& engine, std::shared_ptr<const OptionsMatrix> options, int64_t token_bucket,
              OnBuild on_build = {})
      : engine_(engine), options_(std::move(options)), bucket_(token_bucket), on_build_(std::move(on_build)) {}
  // Seeds the cache with a session already built (the server's probe at start-up), when its
  // capacity's options are `built_with`'s fusion config.
  void adopt(PackedSession session, const SessionOptions& built_with);
  std::vector<Tensors> run(const std::vector<const Tensors*>& requests);
  // Builds every capacity up to max_tokens' that is not built yet.
  void build_up_to(int64_t max_tokens);
  size_t size() const { return sessions_.size(); }

 private:
  const Engine& engine_;
  std::shared_ptr<const OptionsMatrix> options_;
  int64_t bucket_;
  OnBuild on_build_;
  std::shared_ptr<SharedArena> arena_ = std::make_shared<SharedArena>();  // every session's
  std::map<int64_t, PackedSession> sessions_;  // by token capacity
  PackedSession& session_for(int64_t capacity);  // built on first use
};

// Whether `engine` is served packed with these options, and the probe session when it is (its
// capacity is one token bucket); otherwise `why_not` says why (logged at start-up).
std::optional<PackedSession> probe_packing(const Engine& engine, const ServeConfig& config, const SessionOptions& options,
                                           std::string& why_not);

}  // namespace fusor::serve
