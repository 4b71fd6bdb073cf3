// Where packed weights live: carved one after another out of 32 MiB chunks on transparent huge
// pages, so that a model's packed weights sit on 2 MiB pages without each small weight rounding
// up to a huge page of its own.
//
// Why: a decoder's decode step streams every layer's weights from the last-level cache (60+ MB
// for llama-tiny, more than the L2 caches hold). On 4 KiB pages that stream misses the TLB every
// page; on 2 MiB pages it does not: oneDNN's 16-row GEMMs ran ~5% faster on such buffers in a
// micro-benchmark on an AVX-512 Xeon, and llama-tiny's 16-sequence decode steps ~7% faster
// (docs/benchmarks.md). Huge pages are advice (madvise): where the kernel grants none (THP off,
// or fragmented memory) the chunks are plain memory.
//
// The cost: a chunk is one mapping, unmapped when its last buffer goes, and the space of a buffer
// that goes before its neighbours is not reused. Packed weights live as long as the plans that
// share them, mostly the process's life, so a chunk kept by one long-lived buffer (at most 32 MiB)
// is the bound. Sanitizer builds give every buffer an allocation of its own, so that
// AddressSanitizer sees a read past one.
#pragma once
#include <cstddef>
#include <memory>

namespace fusor::cpu {

// `bytes` of uninitialized memory, 64-byte aligned, valid while the returned pointer (or a copy)
// lives. A request of more than half a chunk gets a chunk of its own (rounded up to 2 MiB);
// a smaller one is carved from the current chunk, or from a new one when it does not fit.
// Thread-safe. Throws std::bad_alloc when the memory is not there.
std::shared_ptr<void> weight_buffer(size_t bytes);

}  // namespace fusor::cpu
