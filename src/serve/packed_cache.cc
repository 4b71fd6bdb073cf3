#include "serve/packed_cache.h"

#include "engine/internals.h"
#include "serve/batch_assembly.h"

#include <algorithm>

namespace fusor::serve {

void PackedCache::adopt(PackedSession session, const SessionOptions& built_with) {
  const int64_t capacity = session.capacity();
  if (options_->for_tokens(capacity).fusion != built_with.fusion) return;
  share_arena(session.session(), arena_);
  sessions_.emplace(capacity, std::move(session));
}

PackedSession& PackedCache::session_for(int64_t capacity) {
  auto it = sessions_.find(capacity);
  if (it == sessions_.end()) {
    it = sessions_.emplace(capacity, packed_session(engine_, capacity, options_->for_tokens(capacity))).first;
    share_arena(it->second.session(), arena_);
    if (on_build_) on_build_(capacity, it->second.session());
  }
  return it->second;
}

void PackedCache::build_up_to(int64_t max_tokens) {
  for (int64_t capacity : packed_capacities_up_to(max_tokens, bucket_)) session_for(capacity);
}

std::vector<Tensors> PackedCache::run(const std::vector<const Tensors*>& requests) {
  PackedSession& any = sessions_.empty() ? session_for(bucket_) : sessions_.begin()->second;
  std::vector<Tensors> feeds;
  int64_t tokens = 0;
  for (const Tensors* r : requests) {
    feeds.push_back(*r);
    tokens += any.tokens_of(*r);
  }
  return session_for(packed_capacity(tokens, bucket_)).run(feeds);
}

std::optional<PackedSession> probe_packing(const Engine& engine, const ServeConfig& config, const SessionOptions& options,
                                           std::string& why_not) {
  if (!config.packing) {
    why_not = "serve.packing is off";
  } else if (!options.fusion || options.reference) {
    why_not = "fusion is off (packing needs the attention fusion)";
  } else if (std::find(options.fusion->disabled.begin(), options.fusion->disabled.end(), kPackingItem) !=
             options.fusion->disabled.end()) {
    why_not = "the precision gate rolled packing back (fusion.disabled has 'packing')";
  } else {
    try {
      return packed_session(engine, config.token_bucket, options);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::UnsupportedOp) throw;
      why_not = e.what();
    }
  }
  return std::nullopt;
}

}  // namespace fusor::serve
