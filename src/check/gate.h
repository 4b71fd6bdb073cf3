// The precision gate's method; its options, report and entry point are public (fusor/check.h).
// Every fusion item of the optimized plan is checked against what the model
// computes without it, and reverted when it is wrong.
//
// Three plans run the same samples: optimized (the plan being checked), native (every fusion off)
// and truth (reference kernels, float64 accumulation). The tiers:
//   1. each item's outputs against its own unfused body run on the very same boundary inputs,
//      captured inside the optimized run by an executor observer (the plan is not changed);
//   2. each item's outputs against the same values of whole-model native and truth runs: the
//      block and layer outputs, with the drift accumulated before them;
//   3. the model's outputs end to end;
//   4. edge-case inputs (padding, fully masked rows, huge, tiny, zero, negative, denormal values).
// An item fails when it differs from native beyond the tolerance AND is further from the truth
// than native is by more than the margin; a NaN/Inf that only one side has always fails. Failing
// items are rolled back (added to fusion.disabled) and the plan is rebuilt and checked again until
// it is clean.
#pragma once
#include "check/compare.h"
#include "fusor/check.h"

namespace fusor {

// Records the kv_cache item's verdict in `report`; a failure (a cached decoder that does not
// match the plain loop) rolls it back: kv_cache joins rolled_back and final_fusion.disabled, so
// a saved verdict makes DecoderStep run the plain loop.
void add_kv_cache_item(CheckReport& report, KvCacheVerdict verdict);

}  // namespace fusor
