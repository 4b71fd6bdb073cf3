#include "kernels/cpu/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <new>

namespace fusor::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kChunk = size_t{32} << 20;
constexpr size_t kAlignment = 64;
#if FUSOR_SANITIZE
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// `size` bytes (a multiple of kHugePage) starting on a huge page boundary, advised for huge
// pages. Maps one huge page more than asked and unmaps the ends: only whole aligned 2 MiB
// extents can get huge pages.
std::shared_ptr<std::byte> map_chunk(size_t size) {
  void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePage), end = aligned + size, raw_end = start + size + kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
  auto* p = reinterpret_cast<std::byte*>(aligned);
  madvise(p, size, MADV_HUGEPAGE);  // advice only: failing leaves small pages
  return {p, [size](std::byte* q) { munmap(q, size); }};
}

struct Arena {
  std::mutex mutex;
  std::weak_ptr<std::byte> chunk;  // the chunk being carved; weak, so that it dies with its last buffer
  std::byte* base = nullptr;
  size_t used = 0, size = 0;
};

}  // namespace

std::shared_ptr<void> weight_buffer(size_t bytes) {
  bytes = round_up(std::max<size_t>(bytes, 1), kAlignment);
  if (kSanitized)  // an allocation per buffer, with AddressSanitizer's red zones around it
    return std::shared_ptr<void>(::operator new(bytes, std::align_val_t{kAlignment}),
                                 [](void* p) { ::operator delete(p, std::align_val_t{kAlignment}); });
  if (bytes > kChunk / 2) return map_chunk(round_up(bytes, kHugePage));  // large: a chunk of its own
  static Arena arena;
  std::lock_guard lock(arena.mutex);
  std::shared_ptr<std::byte> chunk = arena.chunk.lock();
  if (!chunk || arena.used + bytes > arena.size) {
    chunk = map_chunk(kChunk);
    arena.chunk = chunk;
    arena.base = chunk.get();
    arena.used = 0;
    arena.size = kChunk;
  }
  std::byte* p = arena.base + arena.used;
  arena.used += bytes;
  return std::shared_ptr<void>(chunk, p);  // shares the chunk's ownership
}

}  // namespace fusor::cpu
