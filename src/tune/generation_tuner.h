// fusor tune for a decoder: continuous-batching settings per traffic class, measured under each
// class's TTFT and inter-token SLO, with capacity in requests and tokens per second.
//
// 1. The fusion config passes the precision gate (the paged KV cache's attention is an item).
// 2. The lead class (the first latency class, else the first) probes every setting of its grid
//    (step_tokens x max_running x prefill_chunk, plus the config's own setting) at saturation:
//    max_running requests always in flight for one duration. The probes rank the settings: for
//    a latency class, those whose saturated TTFT and ITL already meet the SLO by tokens per
//    second, then the rest by how close they come; for a throughput class, by tokens per second.
// 3. The best few are measured for real, with the probe of the most tokens per second and, for
//    the lead, the config's own setting (which is also the baseline, measured once): the
//    open-loop generator against the scheduler at a search of rates (capacity_search.h); the
//    capacity is the highest offered rate measured within the SLO. So the lead's choice is never
//    worse than the config it was given, as measured.
// 4. Every other class is tuned the same way with step_tokens fixed at the lead's choice: the
//    step is shared, and its size bounds the lead's inter-token latency.
// The config written serves each class with its max_running and prefill_chunk and its SLO as
// targets; serve.max_sequences is their sum, so every class can reach its own limit.
#pragma once
#include <atomic>

#include "fusor/tune.h"

namespace fusor::tune {

TuneResult tune_generation(const Engine& engine, const TuneOptions& options, Progress& progress,
                           const std::atomic<bool>& stop);

}  // namespace fusor::tune
