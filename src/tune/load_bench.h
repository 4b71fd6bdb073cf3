// Measures batching settings on the real serving path in this process: the serve::Batcher and
// one serve::SessionCache per execution context, as fusor serve runs them, minus the protocol.
// The sessions are built and warmed once, then shared by every setting measured on this bench.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "fusor/tuned_record.h"
#include "serve/batcher.h"
#include "serve/batch_assembly.h"
#include "serve/packed_cache.h"
#include "serve/session_cache.h"
#include "serve/signature.h"
#include "tune/service_times.h"
#include "tune/token_sweep.h"

namespace fusor::tune {

// Arrival times for a rate and duration (Poisson, or a replayed trace).
using ArrivalSource = std::function<std::vector<double>(double rate_qps, double duration_s, uint64_t seed)>;

// What the load sends, beyond the request's own dims: lengths drawn uniformly (mixed-length
// traffic), and, for a model that packs, the packed sessions' options (the batcher then runs in
// token mode and the setting's max_batch_tokens closes its batches).
struct LoadShape {
  std::optional<Lengths> lengths;            // none: every request has `request`'s dims
  std::optional<SessionOptions> packed;      // none: padded batches through the config matrix
};

class LoadBench {
 public:
  // One setting on the serving path: a Batcher whose context threads build their own sessions
  // and keep them, as in fusor serve (a session run from another thread than the one that
  // built it measured slower). Warming sends a burst per bucket size in `warm_rows`, so the
  // sessions exist before any timing. `serve`: seq_bucket and pad values. `adaptive_window`: the
  // class's window rule, as it will be served.
  LoadBench(const Engine& engine, const ServeConfig& serve, std::shared_ptr<const serve::OptionsMatrix> matrix,
            Layout layout, const std::map<std::string, Dims>& request, const Setting& setting, bool adaptive_window,
            const Slo& slo, const std::vector<int64_t>& warm_rows, const LoadShape& shape = {});
  ~LoadBench();

  // One open-loop run of `duration_s` at `rate_qps`.
  CurvePoint measure(double rate_qps, double duration_s, const ArrivalSource& arrivals, uint64_t seed,
                     const std::atomic<bool>& stop);
  // Answers per second with every context kept busy (tune/closed_loop.h): the ceiling of any
  // rate `measure` can pass. 0 when nothing was answered.
  double saturated_qps(double duration_s, const std::atomic<bool>& stop);
  const Setting& setting() const { return setting_; }
  const Slo& slo() const { return slo_; }

 private:
  static constexpr size_t kAnyLength = static_cast<size_t>(-1);
  // Sends them at once and waits for every answer: of requests_[length], or of the load's mix.
  void burst(int64_t requests, size_t length = kAnyLength);
  // The next request of the load: requests_[length], or drawn from the mix.
  void submit(std::function<void(bool)> done, size_t length = kAnyLength);
  // Token mode, on context `ctx`'s thread before its first batch: builds its packed plans up to
  // the budget's reach, so no plan is built while a point is timed.
  void warm_packed(size_t ctx);

  serve::Signature sig_;
  Layout layout_;
  Setting setting_;
  Slo slo_;
  std::vector<serve::Tensors> requests_;  // one per length of the load
  int64_t min_length_ = 0;               // requests_[i] has min_length_ + i tokens per row (mixed lengths)
  std::mt19937_64 pick_;                 // which length goes next (submit runs on one thread)
  int64_t token_bucket_ = 16;
  std::vector<std::unique_ptr<serve::SessionCache>> caches_;
  std::vector<std::unique_ptr<serve::PackedCache>> packed_caches_;
  std::vector<char> warmed_;             // per context: warm_packed ran (char: set from several threads)
  std::unique_ptr<serve::ModelStats> stats_;
  std::unique_ptr<serve::Batcher> batcher_;
};

}  // namespace fusor::tune
