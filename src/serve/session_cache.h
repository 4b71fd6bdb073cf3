// One execution context's sessions, one per concrete set of input dims (a batch bucket and a
// padded sequence length), created on first use and kept: plans are built per shape, and
// building one costs far more than running it. At most kMaxSessions are kept, the least recently
// used going first: a model whose requests are never padded (an audio model's samples) met a
// new length with nearly every request, and its plans grew without bound (800 of them, 1.8 GB). They run one at a time, so they share one arena,
// the largest's (runtime/shared_arena.h). Not thread-safe: one cache per context thread.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "runtime/shared_arena.h"

namespace fusor::serve {

// The options each batch size builds its sessions with (config serve.matrix): the first bucket
// whose max_batch holds the batch's rows, else `fallback`. Shared, read-only, by the contexts.
struct OptionsMatrix {
  struct Bucket {
    int64_t max_batch;
    SessionOptions options;
  };
  std::vector<Bucket> buckets;  // ascending max_batch
  std::vector<Bucket> token_buckets;  // ascending max tokens (in max_batch): packed plans
  SessionOptions fallback;

  // Resolves serve.matrix over `base` (the session options with the saved verdict applied):
  // each bucket gets its fusion config plus base's disabled names (the verdict's rollbacks and
  // the top-level list). With fusion off (--no-fusion, --reference) there are no buckets.
  static OptionsMatrix of(const ServeConfig& config, const SessionOptions& base);
  const SessionOptions& for_rows(int64_t rows) const;
  // A packed plan of `tokens` tokens: the first max_tokens row that holds it, else `fallback`.
  const SessionOptions& for_tokens(int64_t tokens) const;
  // "<=1: elemwise=1 ... disabled=[a,b]" per bucket, then ">N: ..." (or "all: ...") for the fallback.
  std::vector<std::string> describe() const;
};

// "elemwise=1 norm_act=1 gemm_epilogue=1 attention=0 disabled=[a,b]", or "off".
std::string describe_fusion(const std::optional<FusionConfig>& fusion);

class SessionCache {
 public:
  // `batched`: dimension 0 of every input is the batch (rows); else every batch has 1 row.
  // `on_build(rows, session)` runs after each new session is built (the server logs it).
  using OnBuild = std::function<void(int64_t rows, const std::map<std::string, Dims>& dims, const Session& session)>;
  SessionCache(const Engine& engine, std::shared_ptr<const OptionsMatrix> options, bool batched, OnBuild on_build = {})
      : engine_(engine), options_(std::move(options)), batched_(batched), on_build_(std::move(on_build)) {}
  static constexpr size_t kMaxSessions = 128;

  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs);
  size_t size() const { return sessions_.size(); }
  const std::map<std::map<std::string, Dims>, Session>& sessions() const { return sessions_; }

 private:
  const Engine& engine_;
  std::shared_ptr<const OptionsMatrix> options_;
  bool batched_;
  OnBuild on_build_;
  std::shared_ptr<SharedArena> arena_ = std::make_shared<SharedArena>();  // every session's
  std::map<std::map<std::string, Dims>, Session> sessions_;
  std::map<std::map<std::string, Dims>, uint64_t> last_used_;  // per session: the run that last took it
  uint64_t runs_ = 0;
};

}  // namespace fusor::serve
