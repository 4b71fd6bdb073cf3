// Where packed weights live: carved one after another out of 32 MiB chunks on transparent huge
// pages, so that a model's packed weights sit on 2 MiB pages with no rounding waste per buffer.
//
// Why: a decoder's decode step streams every layer's weights from the last-level cache (60+ MB
// for llama-tiny, more than the L2 caches hold). On 4 KiB pages that stream misses the TLB every
// page; on 2 MiB pages it does not, and oneDNN's 16-row GEMMs ran ~5% faster on such buffers in a
// micro-benchmark on an AVX-512 Xeon (docs/benchmarks.md). Huge pages are advice (madvise): where
// the kernel grants none (THP off, or fragmented memory) the chunks are plain memory.
#pragma once
#include <cstddef>
#include <memory>

namespace fusor::cpu {

// `bytes` of uninitialized memory, 64-byte aligned, that stays valid while the returned pointer
// (or a copy) lives. A chunk is unmapped once every buffer carved from it is gone; a request
// larger than a chunk gets a chunk of its own. Thread-safe. Throws std::bad_alloc when the
// memory is not there.
std::shared_ptr<void> weight_buffer(size_t bytes);

}  // namespace fusor::cpu
