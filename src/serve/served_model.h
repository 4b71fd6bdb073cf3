// A model being served: its engine, signature, statistics, execution contexts and batcher.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "serve/batcher.h"
#include "serve/packed_cache.h"
#include "serve/session_cache.h"
#include "serve/stats.h"

namespace fusor::serve {

class ServedModel {
 public:
  // `threads_per_context`: each context's OpenMP thread count (the ICV is per thread), so N
  // contexts together use the cores without oversubscribing them. `options` hold the top-level
  // fusion config with the saved precision verdict applied; config.matrix refines it per bucket.
  // The matrix, and each session as it is built, is logged to stderr. A packed model's plans are
  // built here, before the server reports ready (serve.prebuild_plans).
  ServedModel(std::string name, Engine engine, const ServeConfig& config, const SessionOptions& options,
              int threads_per_context);
  ~ServedModel();

  const std::string& name() const { return name_; }
  const Signature& signature() const { return sig_; }
  const ServeConfig& config() const { return config_; }
  ModelStats& stats() { return stats_; }
  int64_t max_batch() const { return batcher_->max_batch(); }
  size_t contexts() const { return contexts_.size(); }
  const SessionCache& context(size_t i) const { return *contexts_.at(i); }
  // Served packed (padding-free, token batches), or by length buckets; why, when not packed.
  bool packed() const { return !packed_.empty(); }
  const std::string& not_packed_reason() const { return not_packed_reason_; }
  // Which session options (fusion config) each batch-size bucket uses (serve.matrix).
  const OptionsMatrix& options_matrix() const { return *matrix_; }

  void infer(Tensors inputs, const std::string& cls, Done done, ClientGone gone = {}) {
    batcher_->submit(std::move(inputs), cls, std::move(done), std::move(gone));
  }
  // infer() for a protocol thread that waits for the answer (the batcher always answers). With
  // `gone`, the thread asks it while waiting, and once the client has gone answers Cancelled
  // itself, leaving the batcher to drop the request unless it is already running. `gone` is only
  // called on this thread (gRPC's ServerContext belongs to its handler).
  Completion infer_sync(Tensors inputs, const std::string& cls, const ClientGone& gone = {});
  void refused(const std::string& cls, Code code) { batcher_->refused(cls, code); }
  void drain() { batcher_->drain(); }

 private:
  // Every packed plan up to the classes' token budget, the contexts' caches side by side. A plan
  // takes far longer to build than to run (MiniLM: ~100 ms against 8-40 ms for one request), so
  // building on first use put those builds in the requests' latency: at half load, p99 2.3x the
  // bucket plans'. Built in idle time instead, they put them in the latency of the requests that
  // arrived during a build: a fresh server at one connection, p99 17.5 -> 88-123 ms
  // (docs/benchmarks.md). Before ready, as vLLM captures its CUDA graphs, they cost start-up time.
  void prebuild_packed_plans(int threads_per_context);

  std::string name_;
  Engine engine_;
  Signature sig_;
  ServeConfig config_;
  ModelStats stats_;
  std::shared_ptr<const OptionsMatrix> matrix_;
  std::vector<std::unique_ptr<SessionCache>> contexts_;
  std::vector<std::unique_ptr<PackedCache>> packed_;  // one per context when packed, else empty
  std::string not_packed_reason_;
  std::unique_ptr<Batcher> batcher_;
};

}  // namespace fusor::serve
