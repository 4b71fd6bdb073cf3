#include "profile/ceilings.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/atomic_file.h"
#include "kernels/cpu/matmul_onednn.h"
#include "kernels/cpu/thread_pool.h"

namespace fusor {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
std::unique_ptr<std::byte, AlignedFree> aligned_bytes(size_t n) {
  void* p = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  if (!p) throw Error("ceilings: cannot allocate " + std::to_string(n) + " bytes");
  return std::unique_ptr<std::byte, AlignedFree>(static_cast<std::byte*>(p));
}

// Each thread copies its own contiguous share, as STREAM does; the arrays are touched first by
// the same static schedule so pages sit where their thread runs.
void parallel_copy(std::byte* dst, const std::byte* src, size_t bytes) {
#pragma omp parallel
  {
    const size_t t = static_cast<size_t>(omp_get_thread_num()), n = static_cast<size_t>(omp_get_num_threads());
    const size_t chunk = (bytes / n + 63) / 64 * 64;
    const size_t begin = std::min(bytes, t * chunk), end = std::min(bytes, begin + chunk);
    if (end > begin) std::memcpy(dst + begin, src + begin, end - begin);
  }
}

std::string json_path(const std::string& dir) { return (std::filesystem::path(dir) / "ceilings.json").string(); }

nlohmann::json read_cache(const std::string& dir) {
  if (dir.empty()) return nlohmann::json::object();
  std::ifstream f(json_path(dir));
  if (!f) return nlohmann::json::object();
  try {
    auto j = nlohmann::json::parse(f);
    return j.is_object() ? j : nlohmann::json::object();
  } catch (const std::exception&) {
    return nlohmann::json::object();  // a corrupt cache is remeasured and rewritten
  }
}

// Whole or not at all, so concurrent profilers never read half a file.
bool write_cache(const std::string& dir, const nlohmann::json& j) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return write_file_atomically(json_path(dir), j.dump(2) + "\n");
}

}  // namespace

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        if (!v.empty()) return v;
      }
    }
  }
  return "unknown-cpu";
}

std::string ceilings_cache_dir(const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  if (const char* d = std::getenv("FUSOR_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (std::filesystem::path(d) / "fusor").string();
  if (const char* d = std::getenv("HOME"); d && *d) return (std::filesystem::path(d) / ".cache" / "fusor").string();
  return "";
}

std::string ceilings_cache_key(const std::string& cpu, int threads, bool quick) {
  return cpu + "|threads=" + std::to_string(threads) + (quick ? "|quick" : "|full");
}

double measure_copy_gbps(size_t bytes, int reps) {
  auto src = aligned_bytes(bytes), dst = aligned_bytes(bytes);
#pragma omp parallel
  {
    const size_t t = static_cast<size_t>(omp_get_thread_num()), n = static_cast<size_t>(omp_get_num_threads());
    const size_t chunk = (bytes / n + 63) / 64 * 64;
    const size_t begin = std::min(bytes, t * chunk), end = std::min(bytes, begin + chunk);
    if (end > begin) {
      std::memset(src.get() + begin, 1, end - begin);
      std::memset(dst.get() + begin, 0, end - begin);
    }
  }
  double best = 1e30;
  for (int r = 0; r < std::max(1, reps); ++r) {
    auto t0 = clock_type::now();
    parallel_copy(dst.get(), src.get(), bytes);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * static_cast<double>(bytes) / best / 1e9;
}

double measure_sgemm_gflops(int64_t n, int reps) {
  using dnnl::memory;
  const memory::dims dims = {n, n};
  const memory::desc md(dims, memory::data_type::f32, memory::dims{n, 1});
  std::vector<float> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 7) * 0.125f;
    b[i] = static_cast<float>(i % 5) * 0.25f;
  }
  cpu::OnednnMatmul::Spec spec;
  spec.src = md;
  spec.weights = md;
  spec.dst = md;
  spec.const_weights = b.data();
  cpu::OnednnMatmul mm(std::move(spec));
  std::vector<std::byte> scratch(mm.scratch_bytes() + 64);
  mm.execute(a.data(), nullptr, nullptr, c.data(), {}, scratch);  // warm-up: page faults, JIT
  double best = 1e30;
  for (int r = 0; r < std::max(1, reps); ++r) {
    auto t0 = clock_type::now();
    mm.execute(a.data(), nullptr, nullptr, c.data(), {}, scratch);
    best = std::min(best, seconds_since(t0));
  }
  const double nd = static_cast<double>(n);
  return 2.0 * nd * nd * nd / best / 1e9;
}

Ceilings machine_ceilings(const CeilingOptions& options) {
  Ceilings c;
  c.cpu = cpu_model();
  c.threads = cpu::thread_width();  // also sets OpenMP's team size for the copy loops
  c.quick = options.quick;
  const std::string dir = ceilings_cache_dir(options.cache_dir);
  const std::string key = ceilings_cache_key(c.cpu, c.threads, c.quick);
  nlohmann::json cache = read_cache(dir);
  if (!options.remeasure && cache.contains(key)) {
    const auto& e = cache[key];
    if (e.is_object() && e.value("copy_gbps", 0.0) > 0 && e.value("sgemm_gflops", 0.0) > 0) {
      c.copy_gbps = e["copy_gbps"].get<double>();
      c.sgemm_gflops = e["sgemm_gflops"].get<double>();
      c.cached = true;
      return c;
    }
  }
  auto say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  const size_t copy_bytes = (options.quick ? 16u : 64u) << 20;
  const int64_t n = options.quick ? 512 : 2048;
  char line[256];
  std::snprintf(line, sizeof line, "measuring copy bandwidth (%zu MiB arrays, %d threads)...", copy_bytes >> 20,
                c.threads);
  say(line);
  c.copy_gbps = measure_copy_gbps(copy_bytes, options.quick ? 3 : 5);
  std::snprintf(line, sizeof line, "  copy: %.1f GB/s (read + write)", c.copy_gbps);
  say(line);
  std::snprintf(line, sizeof line, "measuring sgemm (%lldx%lldx%lld f32, oneDNN, %d threads)...",
                static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n), c.threads);
  say(line);
  c.sgemm_gflops = measure_sgemm_gflops(n, options.quick ? 3 : 3);
  std::snprintf(line, sizeof line, "  sgemm: %.1f GFLOP/s", c.sgemm_gflops);
  say(line);

  if (!dir.empty()) {
    cache[key] = {{"copy_gbps", c.copy_gbps},
                  {"sgemm_gflops", c.sgemm_gflops},
                  {"cpu", c.cpu},
                  {"threads", c.threads},
                  {"quick", c.quick},
                  {"measured_at_unix", static_cast<int64_t>(std::time(nullptr))}};
    if (write_cache(dir, cache))
      say("  cached in " + json_path(dir));
    else
      say("  (could not write " + json_path(dir) + "; not cached)");
  }
  return c;
}

}  // namespace fusor
