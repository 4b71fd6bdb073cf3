// When requests arrive, as offsets in seconds from the start of a run: Poisson arrivals at a
// fixed rate (independent users), or a recorded trace replayed at a chosen mean rate (waves of
// peaks that Poisson never produces).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fusor::tune {

// Exponential gaps with mean 1/rate, from a fixed seed: the same schedule on every call.
std::vector<double> poisson_arrivals(double rate_qps, double duration_s, uint64_t seed);

// A recorded arrival trace: ascending arrival times in seconds.
struct Trace {
  std::vector<double> times_s;
  double span_s() const { return times_s.empty() ? 0 : times_s.back() - times_s.front(); }
  double mean_rate() const;  // arrivals per second over the span
};

// Text, one arrival time in seconds per line (ascending; the first column of a CSV line is read;
// blank lines, '#' comments and a non-numeric header line are skipped). Throws fusor::Error
// "PATH:LINE: ..." on a bad line, fewer than 2 arrivals, or times that go backwards.
Trace load_trace(const std::string& path);
Trace parse_trace(const std::string& text, const std::string& source);

// The trace's shape at mean rate `rate_qps` for `duration_s`: time is scaled so the mean rate
// matches, and the trace repeats when it is shorter than the duration.
std::vector<double> replay_arrivals(const Trace& trace, double rate_qps, double duration_s);

// A synthetic recorded-style trace: Poisson arrivals whose rate swings in waves between
// (1 - depth) and (1 + depth) times `mean_qps`, one wave every `period_s`; scripts and tests use
// it to make traces with peaks.
Trace wave_trace(double mean_qps, double duration_s, double period_s, double depth, uint64_t seed);

}  // namespace fusor::tune
