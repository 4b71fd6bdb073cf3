// How fusor tune works; its options, result and entry point are public (fusor/tune.h).
// fusor tune finds, per traffic class, the batching setting with the most throughput under the
// class's SLO, and per batch-size bucket the fastest fusion option that passes the gate.
//
// 1. Gate each fusion option (all, no-attention, none); time one batch per bucket size, option
//    and context layout on the real plans: this picks the config matrix.
// 2. Price every (window, max_batch, contexts) with the batcher model (simulate.h) on those
//    times, and keep the best few per class.
// 3. Measure those few for real: the serving batcher and session caches in this process, driven
//    by the open-loop generator (Poisson or a replayed trace) at a search of rates; the capacity
//    is the highest offered rate measured within the SLO. The default (no fusion, no reuse, no
//    batching) is measured the same way, as the baseline.
// Stopping early (the stop flag) keeps what was measured: the best so far is the result.
#pragma once
#include "fusor/tune.h"

namespace fusor::tune {

// A record's header from the options: model and its hash, machine, threads, request, arrivals
// and duration (the classes, baseline and matrix are the tuner's to fill).
TunedRecord new_record(const TuneOptions& o);

}  // namespace fusor::tune
