// Measures batching settings on the real serving path in this process: the serve::Batcher and
// one serve::SessionCache per execution context, as fusor serve runs them, minus the protocol.
// The sessions are built and warmed once, then shared by every setting measured on this bench.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "fusor/tuned_record.h"
#include "serve/batcher.h"
#include "serve/session_cache.h"
#include "serve/signature.h"
#include "tune/service_times.h"

namespace fusor::tune {

// Arrival times for a rate and duration (Poisson, or a replayed trace).
using ArrivalSource = std::function<std::vector<double>(double rate_qps, double duration_s, uint64_t seed)>;

class LoadBench {
 public:
  // One setting on the serving path: a Batcher whose context threads build their own sessions
  // and keep them, as in fusor serve (a session run from another thread than the one that
  // built it measured slower). Warming sends a burst per bucket size in `warm_rows`, so the
  // sessions exist before any timing. `serve`: seq_bucket and pad values. `adaptive_window`: the
  // class's window rule, as it will be served.
  LoadBench(const Engine& engine, const ServeConfig& serve, std::shared_ptr<const serve::OptionsMatrix> matrix,
            Layout layout, const std::map<std::string, Dims>& request, const Setting& setting, bool adaptive_window,
            const Slo& slo, const std::vector<int64_t>& warm_rows);
  ~LoadBench();

  // One open-loop run of `duration_s` at `rate_qps`.
  CurvePoint measure(double rate_qps, double duration_s, const ArrivalSource& arrivals, uint64_t seed,
                     const std::atomic<bool>& stop);
  const Setting& setting() const { return setting_; }
  const Slo& slo() const { return slo_; }

 private:
  void burst(int64_t requests);  // sends them at once and waits for every answer

  serve::Signature sig_;
  Layout layout_;
  Setting setting_;
  Slo slo_;
  serve::Tensors request_;
  std::vector<std::unique_ptr<serve::SessionCache>> caches_;
  std::unique_ptr<serve::ModelStats> stats_;
  std::unique_ptr<serve::Batcher> batcher_;
};

// The capacity search for one setting: starts below `predicted_qps`, climbs while points pass,
// backs off while they fail, then bisects once between the best pass and the lowest fail.
// `on_point` sees each point as it is measured. Returns with what it has when `stop` is set.
Candidate search_capacity(LoadBench& bench, double predicted_qps, double duration_s, const ArrivalSource& arrivals, const std::atomic<bool>& stop,
                          const std::function<void(const CurvePoint&)>& on_point);

// Points the search measures at most (for progress estimates).
inline constexpr int kMaxSearchPoints = 6;

}  // namespace fusor::tune
