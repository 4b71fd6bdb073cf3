#include "tune/arrivals.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "fusor/error.h"

namespace fusor::tune {

std::vector<double> poisson_arrivals(double rate_qps, double duration_s, uint64_t seed) {
  std::vector<double> out;
  if (rate_qps <= 0 || duration_s <= 0) return out;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate_qps);
  for (double t = gap(rng); t < duration_s; t += gap(rng)) out.push_back(t);
  return out;
}

double Trace::mean_rate() const {
  return span_s() > 0 ? static_cast<double>(times_s.size() - 1) / span_s() : 0;
}

Trace parse_trace(const std::string& text, const std::string& source) {
  Trace t;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string field = line.substr(0, line.find_first_of(",#"));
    field.erase(0, field.find_first_not_of(" \t\r"));
    field.erase(field.find_last_not_of(" \t\r") + 1);
    if (field.empty()) continue;
    double x = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), x);
    bool number = ec == std::errc() && end == field.data() + field.size();
    if (!number && t.times_s.empty() && n == 1) continue;  // a header line
    auto where = source + ":" + std::to_string(n) + ": ";
    if (!number || !std::isfinite(x) || x < 0) throw Error(where + "'" + field + "' is not an arrival time in seconds");
    if (!t.times_s.empty() && x < t.times_s.back())
      throw Error(where + "arrival times must not go backwards (" + field + " after " + std::to_string(t.times_s.back()) + ")");
    t.times_s.push_back(x);
  }
  if (t.times_s.size() < 2 || t.span_s() <= 0) throw Error(source + ": a trace needs at least 2 arrivals over a non-zero span");
  return t;
}

Trace load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read arrival trace");
  std::stringstream s;
  s << in.rdbuf();
  return parse_trace(s.str(), path);
}

std::vector<double> replay_arrivals(const Trace& trace, double rate_qps, double duration_s) {
  std::vector<double> out;
  if (rate_qps <= 0 || duration_s <= 0 || trace.mean_rate() <= 0) return out;
  const double scale = trace.mean_rate() / rate_qps;  // seconds of replay per second of trace
  const double span = trace.span_s() * scale;
  // One lap replays [first, last) of the trace; the next lap starts where the last arrival was.
  const double lap = span;
  for (double base = 0; base < duration_s; base += lap)
    for (size_t i = 0; i + 1 < trace.times_s.size(); ++i) {
      double t = base + (trace.times_s[i] - trace.times_s.front()) * scale;
      if (t >= duration_s) return out;
      out.push_back(t);
    }
  return out;
}

Trace wave_trace(double mean_qps, double duration_s, double period_s, double depth, uint64_t seed) {
  // Thinning: draw at the peak rate, keep each arrival with probability rate(t) / peak.
  std::mt19937_64 rng(seed);
  const double peak = mean_qps * (1 + depth);
  std::exponential_distribution<double> gap(peak);
  std::uniform_real_distribution<double> u(0, 1);
  Trace t;
  for (double x = gap(rng); x < duration_s; x += gap(rng)) {
    double rate = mean_qps * (1 + depth * std::sin(2 * M_PI * x / period_s));
    if (u(rng) * peak < rate) t.times_s.push_back(x);
  }
  return t;
}

}  // namespace fusor::tune
