#include "runtime/shared_arena.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fusor/error.h"
#include "plan/memory_plan.h"

namespace fusor {

std::byte* SharedArena::reserve(size_t bytes, std::byte fill) {
  if (bytes <= size_ && data_) return data_.get();
  const size_t n = std::max<size_t>(bytes, MemoryPlan::kAlignment);
  void* p = std::aligned_alloc(MemoryPlan::kAlignment, (n + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment *
                                                           MemoryPlan::kAlignment);
  if (!p) throw Error("out of memory allocating a " + std::to_string(bytes) + "-byte shared arena");
  std::memset(p, static_cast<int>(fill), n);
  data_ = std::unique_ptr<std::byte, void (*)(void*)>(static_cast<std::byte*>(p), std::free);
  size_ = n;
  ++generation_;
  return data_.get();
}

SharedArena::Use::Use(SharedArena& arena) : arena_(arena) {
  if (arena_.in_use_.exchange(true, std::memory_order_acquire))
    throw Error("two runs at once in one arena: an executor, and the sessions that share its arena, run on one thread at a time");
}

}  // namespace fusor
