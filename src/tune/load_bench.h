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
#include "serve/session_cache.h"
#include "serve/signature.h"
#include "tune/service_times.h"
#include "tune/tuned_record.h"

namespace fusor::tune {

// Arrival times for a rate and duration (Poisson, or a replayed trace).
using ArrivalSource = std::function<std::vector<double>(double rate_qps, double duration_s, uint64_t seed)>;

class LoadBench {
 public:
  // `serve`: the serve section settings are measured under (seq_bucket, pad values).
  // `warm_rows`: the batch buckets to build sessions for before any timing.
  LoadBench(const Engine& engine, const ServeConfig& serve, std::shared_ptr<const serve::OptionsMatrix> matrix,
            Layout layout, const std::map<std::string, Dims>& request, const std::vector<int64_t>& warm_rows);
  ~LoadBench();

  // One open-loop run of `duration_s` at `rate_qps` under `setting` (its contexts must be this
  // bench's layout).
  CurvePoint measure(const Setting& setting, const Slo& slo, double rate_qps, double duration_s,
                     const ArrivalSource& arrivals, uint64_t seed, const std::atomic<bool>& stop);
  const Layout& layout() const { return layout_; }

 private:
  const Engine& engine_;
  ServeConfig serve_;
  serve::Signature sig_;
  Layout layout_;
  serve::Tensors request_;
  std::vector<std::unique_ptr<serve::SessionCache>> caches_;
};

// The capacity search for one setting: starts below `predicted_qps`, climbs while points pass,
// backs off while they fail, then bisects once between the best pass and the lowest fail.
// `on_point` sees each point as it is measured. Returns with what it has when `stop` is set.
Candidate search_capacity(LoadBench& bench, const Setting& setting, const Slo& slo, double predicted_qps,
                          double duration_s, const ArrivalSource& arrivals, const std::atomic<bool>& stop,
                          const std::function<void(const CurvePoint&)>& on_point);

// Points the search measures at most (for progress estimates).
inline constexpr int kMaxSearchPoints = 6;

}  // namespace fusor::tune
