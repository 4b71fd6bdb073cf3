// The arena that packed weights live in (kernels/cpu/weight_arena.h): buffers carved from shared
// huge-page chunks are aligned, disjoint and keep their bytes while other buffers come and go,
// also when threads ask at once; a large buffer gets a chunk of its own on a huge page boundary
// (but in sanitizer builds, where every buffer is an allocation of its own).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/weight_arena.h"

namespace fusor {
namespace {

using cpu::weight_buffer;

struct Buffer {
  std::shared_ptr<void> memory;
  size_t bytes;
  unsigned char fill;
};

Buffer filled(size_t bytes, unsigned char fill) {
  Buffer b{weight_buffer(bytes), bytes, fill};
  std::memset(b.memory.get(), fill, bytes);
  return b;
}

bool intact(const Buffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.memory.get());
  return std::all_of(p, p + b.bytes, [&](unsigned char c) { return c == b.fill; });
}

void expect_aligned_and_disjoint(std::vector<Buffer>& buffers) {
  std::sort(buffers.begin(), buffers.end(), [](const Buffer& a, const Buffer& b) { return a.memory < b.memory; });
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto at = reinterpret_cast<uintptr_t>(buffers[i].memory.get());
    EXPECT_EQ(at % 64, 0u);
    if (i + 1 < buffers.size())
      EXPECT_LE(at + buffers[i].bytes, reinterpret_cast<uintptr_t>(buffers[i + 1].memory.get()));
  }
}

TEST(WeightArena, BuffersAreAlignedDisjointAndKeepTheirBytesWhileOthersGo) {
  std::vector<Buffer> kept, dropped;
  // Odd sizes, more in all than one 32 MiB chunk, so that a second chunk is carved too.
  for (int i = 0; i < 40; ++i) {
    kept.push_back(filled((size_t{1} << 20) + static_cast<size_t>(i) * 13, static_cast<unsigned char>(i)));
    dropped.push_back(filled(1000 + static_cast<size_t>(i), static_cast<unsigned char>(200 + i)));
  }
  dropped.clear();  // their chunk space is not reused while a neighbour lives: the others stay put
  for (int i = 0; i < 8; ++i) kept.push_back(filled(size_t{3} << 20, static_cast<unsigned char>(100 + i)));
  for (const Buffer& b : kept) EXPECT_TRUE(intact(b)) << "buffer filled with " << int(b.fill);
  expect_aligned_and_disjoint(kept);
}

TEST(WeightArena, ALargeBufferStartsOnAHugePage) {
#if FUSOR_SANITIZE
  GTEST_SKIP() << "sanitizer builds give each buffer a plain allocation";
#endif
  Buffer big = filled((size_t{40} << 20) + 123, 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.memory.get()) % (size_t{2} << 20), 0u);
  EXPECT_TRUE(intact(big));
}

TEST(WeightArena, ThreadsAskingAtOnceGetDisjointBuffers) {
  std::vector<std::vector<Buffer>> per_thread(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        per_thread[t].push_back(filled(4096 + static_cast<size_t>(i) * 100, static_cast<unsigned char>(t * 50 + i)));
    });
  for (auto& t : threads) t.join();
  std::vector<Buffer> all;
  for (auto& v : per_thread) all.insert(all.end(), v.begin(), v.end());
  for (const Buffer& b : all) EXPECT_TRUE(intact(b));
  expect_aligned_and_disjoint(all);
}

}  // namespace
}  // namespace fusor
