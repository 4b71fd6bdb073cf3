// Constant weights packed into a primitive's preferred layout, shared by every kernel of every
// plan in the process that packs equal bytes into an equal layout.
//
// Why: a model gets one plan per shape (DecoderBatch: one per token count; packed encoder
// sessions: one per token capacity; the server: one per batch bucket), and each plan's kernels
// used to pack a copy of every weight of their own, ~80 MB per plan for llama-tiny. A packed
// buffer depends only on the source bytes and the two layouts, so one buffer serves them all.
// Identity is the content, not the address: constants rebuilt per plan (merged Q/K/V projections,
// Gemm's alpha-scaled B) are new buffers with equal bytes. A 64-bit hash of the bytes finds the
// candidates, and a candidate is reused only when its bytes, unpacked, equal the source's. (An
// address is only a hint: below, a derived buffer found by its source's address is checked
// against the source before use.) An entry lives as long as some kernel holds it (the cache keeps
// weak references only).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace fusor::cpu {

class PackedWeights {
 public:
  // `packed` lives in `storage` (a weight_buffer), which this object keeps alive.
  PackedWeights(dnnl::memory::desc source, dnnl::memory packed, std::shared_ptr<void> storage)
      : source_(source), packed_(std::move(packed)), storage_(std::move(storage)) {}
  // The shared memory object itself: kernels put it in their argument lists and never rebind
  // its data handle (oneDNN only reads weights).
  const dnnl::memory& memory() const { return packed_; }
  const dnnl::memory::desc& source_desc() const { return source_; }
  size_t bytes() const { return packed_.get_desc().get_size(); }

 private:
  dnnl::memory::desc source_;
  dnnl::memory packed_;
  std::shared_ptr<void> storage_;
};

// `source` (laid out as `source_md`) reordered into `packed_md`: an existing buffer when one with
// equal descs and equal source bytes is alive, else a new one. Thread-safe; plan time only (it
// hashes the source, and on a hit unpacks the candidate to compare). Throws dnnl::error when
// oneDNN cannot reorder between the two layouts, std::bad_alloc when memory runs out.
std::shared_ptr<const PackedWeights> packed_weights(const void* source, const dnnl::memory::desc& source_md,
                                                    const dnnl::memory::desc& packed_md);

// Weights a kernel derived itself (Winograd's transformed weights): an alive buffer of equal
// contents when there is one, else `derived`. Compared on the derived floats, which are all the
// kernel reads, so sharing is exact whatever the source. Thread-safe; plan time only.
std::shared_ptr<const std::vector<float>> shared_derived_weights(std::vector<float> derived);

// The same, for weights derived from a constant source read at `source` through `layout`
// (PanelGemm's panels). Plans built one after another derive from the same buffer, so a buffer
// derived from this address and layout that is still alive is taken once `derived_from_source`
// confirms it element by element (the bytes there may have changed, or the address been reused);
// only otherwise does `derive()` run, its result shared by content as above. Saves deriving,
// hashing and comparing again: most of a packed server's start-up. Thread-safe; plan time only.
std::shared_ptr<const std::vector<float>> shared_derived_weights(
    const void* source, std::span<const int64_t> layout, const std::function<std::vector<float>()>& derive,
    const std::function<bool(const std::vector<float>&)>& derived_from_source);

struct WeightCacheStats {
  size_t entries = 0;  // buffers alive now
  size_t bytes = 0;    // their bytes
  size_t packs = 0;    // buffers packed (or derived) since the process started
  size_t hits = 0;     // requests served by a buffer alive before
  size_t bytes_reused = 0;  // their bytes: what the kernels that hit would have held again
  WeightCacheStats& operator+=(const WeightCacheStats& o);
};
WeightCacheStats packed_weight_cache_stats();   // oneDNN's layouts
WeightCacheStats derived_weight_cache_stats();  // kernels' own (Winograd, PanelGemm)
// Both: a plan's weights whichever kernel packed them.
WeightCacheStats weight_cache_stats();

}  // namespace fusor::cpu
