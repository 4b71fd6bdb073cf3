#include "kernels/cpu/packed_weights.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/weight_arena.h"

namespace fusor::cpu {
namespace {

// Four independent multiply-rotate lanes over 8-byte words: several GB/s, so hashing a model's
// weights costs a few milliseconds per plan. Collisions only cost a comparison.
uint64_t content_hash(const unsigned char* p, size_t n) {
  constexpr uint64_t kOdd1 = 0x9E3779B97F4A7C15ull, kOdd2 = 0xBF58476D1CE4E5B9ull;
  uint64_t lane[4] = {n, n ^ kOdd1, ~n, n + kOdd2};
  auto mix = [&](uint64_t& h, uint64_t w) { h = std::rotl(h ^ (w * kOdd1), 29) * kOdd2; };
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * static_cast<size_t>(l), 8);
      mix(lane[l], w);
    }
  for (int l = 0; i < n; i += 8, l = (l + 1) % 4) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, std::min<size_t>(8, n - i));
    mix(lane[l], w);
  }
  uint64_t h = lane[0];
  for (int l = 1; l < 4; ++l) mix(h, lane[l]);
  h ^= h >> 31;
  return h * kOdd1;
}

void reorder(dnnl::memory from, dnnl::memory to) {  // handles: copies share the buffers
  dnnl::reorder(from, to).execute(onednn::stream(), from, to);
  onednn::stream().wait();
}

// Whether `entry` holds `source`: its bytes unpacked into source_md equal the source's. Unpacking
// rather than keeping a copy of each source keeps the cache at the packed bytes alone. oneDNN
// cannot reorder out of some layouts (Winograd's transformed weights on AVX-512); there the source
// is packed again and compared packed. Before, that failed every second plan's Winograd layers,
// which fell back to reference convolutions (ResNet-18 ran 15x slower in a server's second context).
bool holds(const PackedWeights& entry, const void* source, const dnnl::memory::desc& source_md) {
  auto& eng = onednn::engine();
  dnnl::memory packed = entry.memory();  // a handle: execute() takes it by reference
  const dnnl::memory::desc packed_md = packed.get_desc();
  const dnnl::reorder::primitive_desc unpack(eng, packed_md, eng, source_md, dnnl::primitive_attr(),
                                             /*allow_empty=*/true);
  if (unpack) {
    dnnl::memory unpacked(source_md, eng);
    dnnl::reorder(unpack).execute(onednn::stream(), packed, unpacked);
    onednn::stream().wait();
    return std::memcmp(unpacked.get_data_handle(), source, source_md.get_size()) == 0;
  }
  // Padding a reorder leaves unwritten may differ: that only costs the sharing, never a wrong weight.
  dnnl::memory repacked(packed_md, eng);
  std::memset(repacked.get_data_handle(), 0, packed_md.get_size());
  reorder(dnnl::memory(source_md, eng, const_cast<void*>(source)), repacked);
  return std::memcmp(repacked.get_data_handle(), packed.get_data_handle(), packed_md.get_size()) == 0;
}

struct Cache {
  std::mutex mutex;
  std::unordered_multimap<uint64_t, std::weak_ptr<const PackedWeights>> entries;  // by content hash
  size_t packs = 0, hits = 0, bytes_reused = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

struct DerivedCache {
  std::mutex mutex;
  std::unordered_multimap<uint64_t, std::weak_ptr<const std::vector<float>>> entries;  // by content hash
  size_t derived = 0, hits = 0, bytes_reused = 0;
};

DerivedCache& derived_cache() {
  static DerivedCache c;
  return c;
}

struct SourceCache {  // derived buffers by the source address and layout they came from
  std::mutex mutex;
  std::map<std::pair<const void*, std::vector<int64_t>>, std::weak_ptr<const std::vector<float>>> entries;
};

SourceCache& source_cache() {
  static SourceCache c;
  return c;
}

// Adds `entry` under `key`, dropping the entries no kernel holds any more.
template <class Entries, class Entry>
void remember(Entries& entries, uint64_t key, const std::shared_ptr<Entry>& entry) {
  std::erase_if(entries, [](const auto& slot) { return slot.second.expired(); });
  entries.emplace(key, entry);
}

}  // namespace

std::shared_ptr<const std::vector<float>> shared_derived_weights(std::vector<float> derived) {
  DerivedCache& c = derived_cache();
  const size_t bytes = derived.size() * sizeof(float);
  const uint64_t key = content_hash(reinterpret_cast<const unsigned char*>(derived.data()), bytes);
  std::lock_guard lock(c.mutex);
  auto [first, last] = c.entries.equal_range(key);
  for (auto it = first; it != last; ++it)
    if (auto entry = it->second.lock(); entry && entry->size() == derived.size() &&
                                        std::memcmp(entry->data(), derived.data(), bytes) == 0) {
      ++c.hits;
      c.bytes_reused += bytes;
      return entry;
    }
  auto entry = std::make_shared<const std::vector<float>>(std::move(derived));
  remember(c.entries, key, entry);
  ++c.derived;
  return entry;
}

std::shared_ptr<const std::vector<float>> shared_derived_weights(
    const void* source, std::span<const int64_t> layout, const std::function<std::vector<float>()>& derive,
    const std::function<bool(const std::vector<float>&)>& derived_from_source) {
  SourceCache& sc = source_cache();
  auto key = std::make_pair(source, std::vector<int64_t>(layout.begin(), layout.end()));
  std::shared_ptr<const std::vector<float>> entry;
  {
    std::lock_guard lock(sc.mutex);
    if (auto it = sc.entries.find(key); it != sc.entries.end()) entry = it->second.lock();
  }
  if (entry && derived_from_source(*entry)) {  // entries never change, so no lock while comparing
    DerivedCache& c = derived_cache();
    std::lock_guard lock(c.mutex);
    ++c.hits;
    c.bytes_reused += entry->size() * sizeof(float);
    return entry;
  }
  entry = shared_derived_weights(derive());
  std::lock_guard lock(sc.mutex);
  std::erase_if(sc.entries, [](const auto& slot) { return slot.second.expired(); });
  sc.entries[std::move(key)] = entry;
  return entry;
}

WeightCacheStats& WeightCacheStats::operator+=(const WeightCacheStats& o) {
  entries += o.entries;
  bytes += o.bytes;
  packs += o.packs;
  hits += o.hits;
  bytes_reused += o.bytes_reused;
  return *this;
}

WeightCacheStats derived_weight_cache_stats() {
  DerivedCache& c = derived_cache();
  std::lock_guard lock(c.mutex);
  WeightCacheStats s;
  s.packs = c.derived;
  s.hits = c.hits;
  s.bytes_reused = c.bytes_reused;
  for (const auto& [key, slot] : c.entries)
    if (auto entry = slot.lock()) {
      ++s.entries;
      s.bytes += entry->size() * sizeof(float);
    }
  return s;
}

WeightCacheStats weight_cache_stats() {
  WeightCacheStats s = packed_weight_cache_stats();
  s += derived_weight_cache_stats();
  return s;
}

std::shared_ptr<const PackedWeights> packed_weights(const void* source, const dnnl::memory::desc& source_md,
                                                    const dnnl::memory::desc& packed_md) {
  const uint64_t key = content_hash(static_cast<const unsigned char*>(source), source_md.get_size());
  Cache& c = cache();
  // Held while comparing and packing too: two plans built at once pack a weight once, and the
  // reorders are parallel (OpenMP) themselves.
  std::lock_guard lock(c.mutex);
  auto [first, last] = c.entries.equal_range(key);
  for (auto it = first; it != last; ++it) {
    auto entry = it->second.lock();
    if (!entry || entry->source_desc() != source_md || entry->memory().get_desc() != packed_md) continue;
    if (!holds(*entry, source, source_md)) continue;
    ++c.hits;
    c.bytes_reused += entry->bytes();
    return entry;
  }
  dnnl::memory user(source_md, onednn::engine(), const_cast<void*>(source));
  std::shared_ptr<void> storage = weight_buffer(packed_md.get_size());
  dnnl::memory packed(packed_md, onednn::engine(), storage.get());
  reorder(user, packed);
  auto entry = std::make_shared<const PackedWeights>(source_md, std::move(packed), std::move(storage));
  remember(c.entries, key, entry);
  ++c.packs;
  return entry;
}

WeightCacheStats packed_weight_cache_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  WeightCacheStats s;
  s.packs = c.packs;
  s.hits = c.hits;
  s.bytes_reused = c.bytes_reused;
  for (const auto& [key, slot] : c.entries)
    if (auto entry = slot.lock()) {
      ++s.entries;
      s.bytes += entry->bytes();
    }
  return s;
}

}  // namespace fusor::cpu
