// When requests arrive, as offsets in seconds from the start of a run: Poisson arrivals at a
// fixed rate (independent users), or a recorded trace replayed at a chosen mean rate (waves of
// peaks that Poisson never produces).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusor/tune.h"

namespace fusor::tune {

// Trace and load_trace are public (fusor/tune.h).

// Exponential gaps with mean 1/rate, from a fixed seed: the same schedule on every call.
std::vector<double> poisson_arrivals(double rate_qps, double duration_s, uint64_t seed);

Trace parse_trace(const std::string& text, const std::string& source);  // as load_trace, from text

// The trace's shape at mean rate `rate_qps` for `duration_s`: time is scaled so the mean rate
// matches, and the trace repeats when it is shorter than the duration.
std::vector<double> replay_arrivals(const Trace& trace, double rate_qps, double duration_s);

// A synthetic recorded-style trace: Poisson arrivals whose rate swings in waves between
// (1 - depth) and (1 + depth) times `mean_qps`, one wave every `period_s`; scripts and tests use
// it to make traces with peaks.
Trace wave_trace(double mean_qps, double duration_s, double period_s, double depth, uint64_t seed);

}  // namespace fusor::tune
