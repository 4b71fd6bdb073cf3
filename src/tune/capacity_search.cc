#include "tune/capacity_search.h"

#include <algorithm>
#include <cmath>

namespace fusor::tune {

Candidate search_capacity(const MeasurePoint& measure, const Setting& setting, const Slo& slo, double predicted_qps,
                          double ceiling_qps, double duration_s, const std::atomic<bool>& stop,
                          const std::function<void(const CurvePoint&)>& on_point) {
  Candidate c;
  c.setting = setting;
  c.predicted_qps = predicted_qps;
  double best_pass = 0, lowest_fail = INFINITY;
  // A first point far above what the path can answer queues most of its requests and takes minutes
  // to drain (a model of microseconds is predicted ~100x high: the prediction has no serving cost).
  // A setting priced at 0 (a lone request predicted past the SLO) starts at what the probe carried.
  const double start = predicted_qps > 0 ? predicted_qps : ceiling_qps;
  double rate = std::max(0.5, 0.85 * (ceiling_qps > 0 ? std::min(start, ceiling_qps) : start));
  int remeasures = 0;
  bool again = false;  // this point repeats the last rate
  for (int i = 0; i < kMaxSearchPoints + remeasures && !stop.load(); ++i) {
    double run_s = std::clamp(kMinRequestsPerPoint / rate, duration_s, 4 * duration_s);
    CurvePoint p = measure(rate, run_s, 1000 + static_cast<uint64_t>(i));
    if (stop.load()) break;  // a cut-short point is not a measurement
    if (p.offered_qps == 0 && p.achieved_qps == 0 && p.errors == 0) {
      // No request arrived in the run (a low rate, a short --duration): nothing was measured, and
      // a point of 0 ms at 0 qps would anchor plan's interpolation.
      rate *= 2;
      continue;
    }
    if (again) c.curve.pop_back();  // the failed run is replaced by its repeat
    c.curve.push_back(p);
    if (on_point) on_point(p);
    // Until a point passes, a failure is measured once more before the search backs off: a stall
    // of a shared machine fails one short run, a rate beyond the setting's capacity fails both,
    // and a search that never passes leaves the setting no capacity at all (plan then has
    // nothing to size). Past the first pass a failure only narrows the bisection, so it stands.
    const bool pass = meets(p, slo);
    again = !pass && !again && best_pass == 0 && remeasures < kMaxRemeasures;
    if (again) {
      ++remeasures;
      continue;
    }
    if (pass) {
      best_pass = std::max(best_pass, rate);
    } else {
      lowest_fail = std::min(lowest_fail, rate);
    }
    if (best_pass > 0 && std::isfinite(lowest_fail)) {
      if (lowest_fail / best_pass < 1.08) break;  // within the noise of a run
      rate = (best_pass + lowest_fail) / 2;
    } else {
      // Far below the SLO: climb fast (the prediction can be well off on a busy machine). Before
      // a pass, back off below what was answered: a prediction from service times alone can be
      // orders of magnitude high for a model of microseconds, where serving costs dominate.
      rate = best_pass > 0             ? rate * (slo_load(p, slo) < 0.5 ? 1.6 : 1.25)
             : p.achieved_qps > 0      ? std::max(0.5, std::min(rate * 0.6, 0.85 * p.achieved_qps))
                                       : rate * 0.6;
    }
  }
  // Stable: two runs may offer the same rate (offered counts the arrivals actually sent).
  std::stable_sort(c.curve.begin(), c.curve.end(), [](const CurvePoint& a, const CurvePoint& b) { return a.offered_qps < b.offered_qps; });
  c.capacity_qps = measured_capacity(c.curve, slo);
  return c;
}

}  // namespace fusor::tune
