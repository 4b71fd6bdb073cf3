#include "tune/service_times.h"


#include <chrono>
#include <thread>

#include "kernels/cpu/thread_pool.h"
#include "tune/open_loop.h"

namespace fusor::tune {

std::vector<FusionOption> fusion_options(const FusionConfig& base) {
  FusionConfig no_attention = base, none = base;
  no_attention.fuse_attention = false;
  set_every_switch(none, false);
  std::vector<FusionOption> out = {{"all", base}};
  if (!(no_attention == base)) out.push_back({"no-attention", no_attention});
  if (!(none == base)) out.push_back({"none", none});
  return out;
}

std::map<std::string, Dims> with_rows(const std::map<std::string, Dims>& request, int64_t rows) {
  auto dims = request;
  for (auto& [name, d] : dims)
    if (!d.empty()) d[0] = rows;
  return dims;
}

ServiceTimes measure_service_times(const Engine& engine, const std::map<std::string, Dims>& request,
                                   const SessionOptions& options, const std::vector<int64_t>& rows, Layout layout,
                                   double seconds, const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  ServiceTimes out;
  for (int64_t r : rows) {
    if (stop.load()) break;
    auto dims = with_rows(request, r);
    auto feeds = engine.sample_inputs(dims);
    std::vector<double> medians(static_cast<size_t>(layout.contexts));
    std::vector<std::thread> contexts;
    for (int64_t c = 0; c < layout.contexts; ++c)
      contexts.emplace_back([&, c] {
        cpu::set_thread_width(static_cast<int>(layout.threads_per_context));
        Session session = engine.session(dims, options);
        session.run(feeds);  // warm: first-run allocations and primitive creation
        std::vector<double> ms;
        auto start = Clock::now();
        while (ms.size() < 3 || (std::chrono::duration<double>(Clock::now() - start).count() < seconds && !stop.load())) {
          auto t0 = Clock::now();
          session.run(feeds);
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        medians[static_cast<size_t>(c)] = percentile(ms, 50);
      });
    for (auto& t : contexts) t.join();
    double sum = 0;
    for (double m : medians) sum += m;
    out.ms_by_rows[r] = sum / static_cast<double>(medians.size());
  }
  return out;
}

}  // namespace fusor::tune
