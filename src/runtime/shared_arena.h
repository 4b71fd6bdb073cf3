// One arena that several executors share, one run at a time: a server context's packed plans (one
// per token capacity) run one batch after another on the context's thread, so each needs its
// bytes only while it runs. Shared, they take the largest plan's arena instead of the sum of all
// (MiniLM's 39 capacities up to 2048 tokens: ~30 MB instead of ~370 MB per context).
//
// Executors ask for their size when they are built (or handed the arena); the arena grows to the
// largest, and those built before a growth see the new bytes at their next run (generation()).
// An executor that shares nothing holds one of these of its own, sized at its first run. A run starts from
// whatever the previous plan left: the memory planner already reuses bytes between values within
// one run, so no kernel may rely on its bytes' earlier contents (mem_guard's canaries and poison
// check that).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace fusor {

class SharedArena {
 public:
  // The arena's bytes, at least `bytes` of them; a larger request replaces the buffer with a new
  // one filled with `fill` (executors built earlier rebind at their next run).
  std::byte* reserve(size_t bytes, std::byte fill);
  std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }
  // Bumped each time the buffer is replaced.
  uint64_t generation() const { return generation_; }

  // Held for the length of one run: a second run at the same time is a caller's bug (two threads
  // on one executor, or on one context's sessions), refused with an Error rather than letting the
  // runs overwrite each other.
  class Use {
   public:
    explicit Use(SharedArena& arena);
    ~Use() { arena_.in_use_.store(false, std::memory_order_release); }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    SharedArena& arena_;
  };

 private:
  std::unique_ptr<std::byte, void (*)(void*)> data_{nullptr, [](void*) {}};
  size_t size_ = 0;
  uint64_t generation_ = 0;
  std::atomic<bool> in_use_{false};
};

}  // namespace fusor
