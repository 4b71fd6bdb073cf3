// shortest_float: checks serve::shortest_float against std::to_chars on every float32 (or every
// k-th with --stride k), character for character, on all cores, and times both on the floats of a
// MiniLM-like response.
//   shortest_float [--stride K]
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "serve/shortest_float.h"

namespace {

double ns_per_float(const std::vector<float>& values, bool ours) {
  char buf[64];
  size_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 20; ++rep)
    for (float v : values) {
      char* end = ours ? fusor::serve::shortest_float(buf, v) : std::to_chars(buf, buf + sizeof buf, v).ptr;
      sink += static_cast<size_t>(end - buf);
    }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sink == 0) std::puts("");
  return s * 1e9 / (20.0 * static_cast<double>(values.size()));
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t stride = 1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--stride") == 0) stride = std::stoull(argv[i + 1]);
  // Timing: hidden-state-like values, normal around zero.
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 0.6f);
  std::vector<float> values(1 << 16);
  for (float& v : values) v = normal(rng);
  const double theirs = ns_per_float(values, false), ours = ns_per_float(values, true);
  std::printf("ns per float: std::to_chars %.1f, shortest_float %.1f (%.2fx)\n", theirs, ours, theirs / ours);

  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> checked{0}, mismatches{0};
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      char a[64], b[64];
      uint64_t n = 0;
      for (uint64_t bits = w * stride; bits < (uint64_t{1} << 32); bits += stride * threads) {
        float v;
        const uint32_t b32 = static_cast<uint32_t>(bits);
        std::memcpy(&v, &b32, 4);
        if (!std::isfinite(v)) continue;
        char* ea = fusor::serve::shortest_float(a, v);
        char* eb = std::to_chars(b, b + sizeof b, v).ptr;
        ++n;
        if (ea - a != eb - b || std::memcmp(a, b, static_cast<size_t>(ea - a)) != 0) {
          if (mismatches.fetch_add(1) < 10)
            std::printf("mismatch 0x%08x: ours %.*s, std::to_chars %.*s\n", b32, static_cast<int>(ea - a), a,
                        static_cast<int>(eb - b), b);
        }
      }
      checked += n;
    });
  for (auto& t : pool) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("checked %llu finite floats (stride %llu) in %.0f s: %llu mismatches\n",
              static_cast<unsigned long long>(checked.load()), static_cast<unsigned long long>(stride), s,
              static_cast<unsigned long long>(mismatches.load()));
  return mismatches.load() == 0 ? 0 : 1;
}
